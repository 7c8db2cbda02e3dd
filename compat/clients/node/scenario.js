// What the Node drivers of the client matrix share: arguments, record contents and the output
// protocol of run_matrix.py (STEP / REC / INFO lines; ../README.md). CommonJS, so both the kafkajs
// driver (require) and the @platformatic/kafka driver (import) can load it.
'use strict'

const TX_SKIP = 'transactions not built yet in Sluice'

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

module.exports = { TX_SKIP, Skip, args, out, step, key, value, Reads, sleep, waitTopicGone }
