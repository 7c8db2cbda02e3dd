// Client-matrix driver for @platformatic/kafka 1.35.0 (pure JavaScript; 1.35 is the newest line that
// runs on Node.js 20, 2.x needs Node 22). It has no cooperative rebalancing: that step SKIPs.
//
//   node platformatic_driver.mjs BOOTSTRAP TOPIC GROUP RECORDS PARTITIONS FIRST
import { createRequire } from 'node:module'
import { Admin, Consumer, FetchIsolationLevels, Producer, ProduceAcks, stringDeserializers, stringSerializers } from '@platformatic/kafka'

const require = createRequire(import.meta.url)
const { Skip, args, out, step, key, value, Reads, waitTopicGone, sleep, TXN_OFFSET, txnRecords, TxnReader, txnWaitOffset } = require('./scenario.js')

async function main () {
  const a = args(process.argv)
  out('INFO @platformatic/kafka ' + JSON.parse(require('node:fs').readFileSync(new URL('./node_modules/@platformatic/kafka/package.json', import.meta.url))).version)
  const brokers = a.bootstrap.split(',')
  const admin = new Admin({ clientId: 'matrix-platformatic', bootstrapBrokers: brokers })
  const reads = new Reads()

  await step('create', async () => {
    await admin.createTopics({ topics: [a.topic], partitions: a.partitions, replicas: 1 })
    return `CreateTopics ${a.partitions} partitions`
  })

  await step('produce', async () => {
    const p = new Producer({ clientId: 'matrix-platformatic', bootstrapBrokers: brokers, serializers: stringSerializers, idempotent: true, acks: ProduceAcks.ALL })
    try {
      const messages = []
      for (let i = 0; i < a.records; i++) {
        messages.push({ topic: a.topic, key: key(i), value: value(i, a.client), headers: { 'h-index': String(i), 'h-client': a.client }, timestamp: BigInt(a.base + i) })
      }
      for (let i = 0; i < messages.length; i += 100) await p.send({ messages: messages.slice(i, i + 100) })
    } finally {
      await p.close()
    }
    return `${a.records} records, acks=all, idempotent`
  })

  async function phase (n, want) {
    const c = new Consumer({ clientId: 'matrix-platformatic', groupId: a.group, bootstrapBrokers: brokers, deserializers: stringDeserializers })
    let got = 0
    const last = new Map()
    try {
      const stream = await c.consume({ topics: [a.topic], mode: 'committed', fallbackMode: 'earliest', autocommit: false, maxWaitTime: 500 })
      const deadline = Date.now() + 60000
      const timer = setInterval(() => { if (Date.now() > deadline) stream.close() }, 500)
      try {
        for await (const m of stream) {
          got++
          reads.rec(n, m.partition, Number(m.offset), m.key, m.value, [...m.headers].map(([hk, hv]) => [hk, hv]))
          last.set(m.partition, m)
          if (got >= want) break
        }
      } finally {
        clearInterval(timer)
      }
      for (const m of last.values()) await m.commit()
      await stream.close()
    } finally {
      await c.close()
    }
    if (got < want) throw new Error(`read ${got} of ${want} records in 60 s`)
    return `${got} records, committed`
  }
  await step('consume', () => phase(1, a.first))
  await step('resume', () => phase(2, a.records - a.first))

  await step('offsets_for_times', async () => {
    const c = new Consumer({ clientId: 'matrix-platformatic', groupId: a.group + '-times', bootstrapBrokers: brokers })
    try {
      const r = (await c.listOffsetsWithTimestamps({ topics: [a.topic], timestamp: BigInt(a.base + a.first) })).get(a.topic)
      const d = []
      for (let p = 0; p < a.partitions; p++) {
        const [want, size] = reads.expectedAfter(p, a.first)
        const o = r && r.get(p) ? Number(r.get(p).offset) : undefined
        if (o !== want && !(want === size && (o === -1 || o === size))) {
          throw new Error(`partition ${p}: offset ${o} for timestamp base+${a.first}, expected ${want}`)
        }
        d.push(`${p}->${o}`)
      }
      return d.join(' ')
    } finally {
      await c.close()
    }
  })

  await step('rebalance', async () => { throw new Skip('@platformatic/kafka has no cooperative rebalancing (classic eager protocol only)') })

  await step('describe', async () => {
    const md = await admin.metadata({ topics: [a.topic] })
    const t = md.topics.get(a.topic)
    if (!t || t.partitionsCount !== a.partitions || t.partitions.some((p) => p.leader < 0)) throw new Error('metadata ' + JSON.stringify(t))
    return `Metadata: ${t.partitionsCount} partitions with leaders`
  })

  await step('delete_records', async () => {
    const r = await admin.deleteRecords({ topics: [{ name: a.topic, partitions: [{ partition: 0, offset: 10n }] }] })
    const low = r[0].partitions[0].lowWatermark
    if (Number(low) !== 10) throw new Error(`low watermark ${low} after deleting before 10`)
    return 'partition 0 low watermark 10'
  })

  // The transactions step. @platformatic/kafka sends offsets with Transaction.addConsumer(consumer)
  // and addOffset(message) (message.offset + 1, with the group metadata the message carries): the
  // offset 7 goes as a message of TOPIC partition 0 at offset 6 carrying the metadata of a consumer of
  // GROUP-txn that never joins the group (generation -1), as a consume-transform-produce loop would
  // pass the messages it consumed.
  await step('transactions', async () => {
    const txTopic = a.topic + '-txn'
    const txGroup = a.group + '-txn'
    await admin.createTopics({ topics: [txTopic], partitions: a.partitions, replicas: 1 })
    const p = new Producer({ clientId: 'matrix-platformatic', bootstrapBrokers: brokers, serializers: stringSerializers, idempotent: true, transactionalId: `${a.group}-txn-${a.client}`, acks: ProduceAcks.ALL })
    const gc = new Consumer({ clientId: 'matrix-platformatic', groupId: txGroup, bootstrapBrokers: brokers })
    try {
      for (let t = 0; t < 3; t++) {
        const tx = await p.beginTransaction()
        // send resolves once the records are acknowledged: sent before the commit or abort
        await tx.send({ messages: txnRecords(t, a.client, a.partitions).map((r) => ({ topic: txTopic, ...r })) })
        if (t === 0) {
          await tx.addConsumer(gc)
          const consumer = { groupId: txGroup, generationId: -1, memberId: '', coordinatorId: await gc.findGroupCoordinator() }
          await tx.addOffset({ topic: a.topic, partition: 0, offset: BigInt(TXN_OFFSET - 1), metadata: { consumer } })
        }
        if (t === 1) await tx.abort()
        else await tx.commit()
      }
    } finally {
      await p.close()
      await gc.close()
    }
    const counts = []
    for (const [view, want] of [['committed', 40], ['uncommitted', 60]]) {
      // consuming needs a group here: a fresh one per view, from the beginning
      const c = new Consumer({ clientId: 'matrix-platformatic', groupId: `${txGroup}-${view}`, bootstrapBrokers: brokers, deserializers: stringDeserializers })
      const r = new TxnReader(view, want)
      try {
        const stream = await c.consume({
          topics: [txTopic], mode: 'earliest', autocommit: false, maxWaitTime: 200,
          isolationLevel: view === 'committed' ? FetchIsolationLevels.READ_COMMITTED : FetchIsolationLevels.READ_UNCOMMITTED
        })
        stream.on('data', (m) => r.rec(m.partition, Number(m.offset), m.key, m.value))
        while (!r.done()) await sleep(100)
        await stream.close()
      } finally {
        await c.close()
      }
      counts.push(r.got)
    }
    const off = await txnWaitOffset(async () => {
      const r = await admin.listConsumerGroupOffsets({ groups: [txGroup], requireStable: true })
      const t = r[0].topics.find((x) => x.name === a.topic)
      const p0 = t && t.partitions.find((x) => x.partitionIndex === 0)
      return p0 ? Number(p0.committedOffset) : -1
    })
    return `3 transactions (commit 30 + addOffset, abort 20, commit 10); read_committed ${counts[0]}, read_uncommitted ${counts[1]}, group offset ${off}`
  })

  await step('delete', async () => {
    await admin.deleteTopics({ topics: [a.topic] })
    return waitTopicGone(() => admin.listTopics(), a.topic)
  })
  await admin.close()
  out('DONE')
}

main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1) })
