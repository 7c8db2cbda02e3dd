// What the Node drivers of the client matrix share: arguments, record contents and the output
// protocol of run_matrix.py (STEP / REC / INFO lines; ../README.md). CommonJS, so both the kafkajs
// driver (require) and the @platformatic/kafka driver (import) can load it.
'use strict'

// The transactions step (../README.md): on TOPIC-txn, a transactional producer commits 30 records
// (and the group GROUP-txn's offset TXN_OFFSET for TOPIC partition 0 where the client can send
// offsets), aborts 20, commits 10. Record i of transaction t has key "k<i>", value
// "<client>-<TXN_TAGS[t]>-<i>" and goes to partition i % 3. A read_committed and a read_uncommitted
// consumer print what they read as TXN lines, the group's offset is printed as TXNOFFSET;
// run_matrix.py checks them.
const TXN_TAGS = ['c', 'a', 'c2']
const TXN_COUNTS = [30, 20, 10]
const TXN_OFFSET = 7

// [{partition, key, value}] of transaction t's records (t = 0, 1, 2).
function txnRecords (t, client, partitions) {
  const r = []
  for (let i = 0; i < TXN_COUNTS[t]; i++) r.push({ partition: i % partitions, key: 'k' + i, value: `${client}-${TXN_TAGS[t]}-${i}` })
  return r
}

// Counts the TXN records of one view ("committed" or "uncommitted"): done() once `want` were read
// and 1 s more passed (an extra record is a failure too), or after 30 s.
class TxnReader {
  constructor (view, want) {
    this.view = view
    this.want = want
    this.got = 0
    this.deadline = Date.now() + 30000
  }

  rec (partition, offset, k, v) {
    out(`TXN\t${this.view}\t${partition}\t${offset}\t${k}\t${v}`)
    if (++this.got === this.want) this.deadline = Math.min(this.deadline, Date.now() + 1000)
  }

  done () { return Date.now() >= this.deadline }
}

// Calls fetch() (the group's committed offset for TOPIC partition 0, -1 when none) until it answers
// TXN_OFFSET, for at most 15 s (the offset shows once the COMMIT marker is in __consumer_offsets);
// prints TXNOFFSET with the last answer and returns it.
async function txnWaitOffset (fetch) {
  const deadline = Date.now() + 15000
  for (;;) {
    const o = await fetch()
    if (o === TXN_OFFSET || Date.now() > deadline) {
      out(`TXNOFFSET ${o}`)
      return o
    }
    await sleep(200)
  }
}

class Skip extends Error {}

function args (argv) {
  if (argv.length < 8) {
    console.error('usage: node driver BOOTSTRAP TOPIC GROUP RECORDS PARTITIONS FIRST')
    process.exit(2)
  }
  return {
    bootstrap: argv[2],
    topic: argv[3],
    group: argv[4],
    records: Number(argv[5]),
    partitions: Number(argv[6]),
    first: Number(argv[7]),
    client: process.env.MATRIX_CLIENT || 'node',
    base: Date.now() - 60000 // CreateTime of record i is base + i
  }
}

function out (line) {
  process.stdout.write(line + '\n')
}

async function step (name, fn) {
  try {
    const detail = await fn()
    out(`STEP ${name} PASS ${detail || ''}`)
  } catch (e) {
    if (e instanceof Skip) {
      out(`STEP ${name} SKIP ${e.message}`)
    } else {
      console.error(e)
      out(`STEP ${name} FAIL ${(e && e.name) || 'Error'}: ${String((e && e.message) || e).replace(/\n/g, ' ').slice(0, 400)}`)
    }
  }
}

const key = (i) => 'k' + String(i).padStart(4, '0')
const value = (i, c) => 'v' + String(i).padStart(4, '0') + '-' + c

class Reads {
  constructor () { this.byPart = new Map() }
  rec (phase, partition, offset, k, v, hdrs) {
    const hs = hdrs.map(([hk, hv]) => `${hk}=${hv}`).join(',')
    out(`REC\t${phase}\t${partition}\t${offset}\t${k}\t${v}\t${hs}`)
    if (!this.byPart.has(partition)) this.byPart.set(partition, [])
    this.byPart.get(partition).push(Number(k.slice(1)))
  }

  // [records with index < first in the partition, records in it]: ListOffsets for timestamp
  // base+first must answer the former (records produced in index order, CreateTime base+i).
  expectedAfter (partition, first) {
    const idx = this.byPart.get(partition) || []
    return [idx.filter((i) => i < first).length, idx.length]
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

// The end of the delete step: polls listTopics() every 200 ms until `topic` is gone, for at most 30 s.
async function waitTopicGone (listTopics, topic) {
  const deadline = Date.now() + 30000
  while ((await listTopics()).includes(topic)) {
    if (Date.now() > deadline) throw new Error('topic still listed 30 s after delete')
    await sleep(200)
  }
  return 'DeleteTopics, no longer listed'
}

module.exports = { Skip, args, out, step, key, value, Reads, sleep, waitTopicGone, TXN_OFFSET, txnRecords, TxnReader, txnWaitOffset }
