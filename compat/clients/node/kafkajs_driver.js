// Client-matrix driver for kafkajs 2.2.4 (pure JavaScript). kafkajs has no cooperative rebalancing:
// that step SKIPs.
//
//   node kafkajs_driver.js BOOTSTRAP TOPIC GROUP RECORDS PARTITIONS FIRST
'use strict'
const { Kafka, logLevel } = require('kafkajs')
const { Skip, args, out, step, key, value, Reads, sleep, waitTopicGone, TXN_OFFSET, txnRecords, TxnReader, txnWaitOffset } = require('./scenario.js')

async function main () {
  const a = args(process.argv)
  out('INFO kafkajs ' + require('kafkajs/package.json').version)
  const kafka = new Kafka({ clientId: 'matrix-kafkajs', brokers: a.bootstrap.split(','), logLevel: logLevel.ERROR })
  const admin = kafka.admin()
  await admin.connect()
  const reads = new Reads()

  await step('create', async () => {
    const created = await admin.createTopics({ topics: [{ topic: a.topic, numPartitions: a.partitions, replicationFactor: 1 }], waitForLeaders: true, timeout: 30000 })
    if (!created) throw new Error('createTopics answered false (topic existed)')
    return `CreateTopics ${a.partitions} partitions`
  })

  await step('produce', async () => {
    const p = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
    await p.connect()
    try {
      const messages = []
      for (let i = 0; i < a.records; i++) {
        messages.push({ key: key(i), value: value(i, a.client), headers: { 'h-index': String(i), 'h-client': a.client }, timestamp: String(a.base + i) })
      }
      await p.send({ topic: a.topic, acks: -1, messages })
    } finally {
      await p.disconnect()
    }
    return `${a.records} records, acks=all, idempotent`
  })

  async function phase (n, want) {
    const c = kafka.consumer({ groupId: a.group, maxWaitTimeInMs: 500 })
    await c.connect()
    let got = 0
    const commit = new Map()
    try {
      await c.subscribe({ topic: a.topic, fromBeginning: true })
      await c.run({
        autoCommit: false,
        eachMessage: async ({ partition, message }) => {
          if (got >= want) return
          got++
          const hdrs = Object.entries(message.headers || {}).map(([hk, hv]) => [hk, hv.toString()])
          reads.rec(n, partition, Number(message.offset), message.key.toString(), message.value.toString(), hdrs)
          commit.set(partition, Number(message.offset) + 1)
        }
      })
      const deadline = Date.now() + 60000
      while (got < want && Date.now() < deadline) await sleep(100)
      c.pause([{ topic: a.topic }])
      if (commit.size) {
        await c.commitOffsets([...commit].map(([partition, o]) => ({ topic: a.topic, partition, offset: String(o) })))
      }
    } finally {
      await c.disconnect()
    }
    if (got < want) throw new Error(`read ${got} of ${want} records in 60 s`)
    return `${got} records, committed`
  }
  await step('consume', () => phase(1, a.first))
  await step('resume', () => phase(2, a.records - a.first))

  await step('offsets_for_times', async () => {
    const r = await admin.fetchTopicOffsetsByTimestamp(a.topic, a.base + a.first)
    const d = []
    for (const { partition, offset } of r) {
      const [want, size] = reads.expectedAfter(partition, a.first)
      const o = Number(offset)
      if (o !== want && !(want === size && (o === -1 || o === size))) {
        throw new Error(`partition ${partition}: offset ${o} for timestamp base+${a.first}, expected ${want}`)
      }
      d.push(`${partition}->${o}`)
    }
    if (r.length !== a.partitions) throw new Error(`${r.length} partitions answered`)
    return d.join(' ')
  })

  await step('rebalance', async () => { throw new Skip('kafkajs has no cooperative rebalancing (eager protocol only)') })

  await step('describe', async () => {
    const md = await admin.fetchTopicMetadata({ topics: [a.topic] })
    const parts = md.topics[0].partitions
    if (parts.length !== a.partitions || parts.some((p) => p.leader < 0)) throw new Error('partitions ' + JSON.stringify(parts))
    return `${parts.length} partitions with leaders`
  })

  await step('delete_records', async () => {
    await admin.deleteTopicRecords({ topic: a.topic, partitions: [{ partition: 0, offset: '10' }] })
    const offs = await admin.fetchTopicOffsets(a.topic)
    const p0 = offs.find((o) => o.partition === 0)
    if (Number(p0.low) !== 10) throw new Error(`earliest offset ${p0.low} after DeleteRecords(10)`)
    return 'partition 0 deleted before 10, earliest 10 (kafkajs returns no low watermark)'
  })

  await step('transactions', async () => {
    const txTopic = a.topic + '-txn'
    const txGroup = a.group + '-txn'
    if (!await admin.createTopics({ topics: [{ topic: txTopic, numPartitions: a.partitions, replicationFactor: 1 }], waitForLeaders: true, timeout: 30000 })) {
      throw new Error('createTopics answered false (topic existed)')
    }
    const p = kafka.producer({ transactionalId: `${a.group}-txn-${a.client}`, idempotent: true, maxInFlightRequests: 1 })
    await p.connect() // InitProducerId for the transactional id
    try {
      for (let t = 0; t < 3; t++) {
        const tx = await p.transaction()
        // send resolves once the records are acknowledged: sent before the commit or abort
        await tx.send({ topic: txTopic, acks: -1, messages: txnRecords(t, a.client, a.partitions) })
        if (t === 0) {
          await tx.sendOffsets({ consumerGroupId: txGroup, topics: [{ topic: a.topic, partitions: [{ partition: 0, offset: String(TXN_OFFSET) }] }] })
        }
        if (t === 1) await tx.abort()
        else await tx.commit()
      }
    } finally {
      await p.disconnect()
    }
    const counts = []
    for (const [view, want] of [['committed', 40], ['uncommitted', 60]]) {
      // kafkajs consumes only in a group: a fresh one per view, from the beginning
      const c = kafka.consumer({ groupId: `${txGroup}-${view}`, maxWaitTimeInMs: 200, readUncommitted: view === 'uncommitted' })
      await c.connect()
      const r = new TxnReader(view, want)
      try {
        await c.subscribe({ topic: txTopic, fromBeginning: true })
        await c.run({
          autoCommit: false,
          eachMessage: async ({ partition, message }) => { r.rec(partition, Number(message.offset), message.key.toString(), message.value.toString()) }
        })
        while (!r.done()) await sleep(100)
      } finally {
        await c.disconnect()
      }
      counts.push(r.got)
    }
    const off = await txnWaitOffset(async () => {
      const r = await admin.fetchOffsets({ groupId: txGroup, topics: [a.topic] })
      const p0 = r[0].partitions.find((x) => x.partition === 0)
      return p0 ? Number(p0.offset) : -1
    })
    return `3 transactions (commit 30 + sendOffsets, abort 20, commit 10); read_committed ${counts[0]}, read_uncommitted ${counts[1]}, group offset ${off}`
  })

  await step('delete', async () => {
    await admin.deleteTopics({ topics: [a.topic], timeout: 30000 })
    return waitTopicGone(() => admin.listTopics(), a.topic)
  })
  await admin.disconnect()
  out('DONE')
}

main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1) })
