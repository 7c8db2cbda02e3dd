// Fault-injection driver for kafkajs 2.2.4, used by tests/integration/http_faults_clients_test.py: it adds fault
// rules to the broker's HTTP side (POST /v1/faults, broker/http/README.md) with Node's http module, produces with a
// kafkajs producer and reads back with a kafkajs consumer.
//
//   node kafkajs_faults.js BOOTSTRAP HTTP_BASE      (HTTP_BASE e.g. http://127.0.0.1:9644)
//
// A line protocol on stdin/stdout, so one process serves a whole test run (the test adds a fault, then asks for the
// send it is meant to hit). The first line out is {"info": "kafkajs <version>"}; then each input line is one JSON
// command, answered by exactly one JSON line {"id": <the command's id>, "ok": true|false, "ms": <wall ms>, ...}:
//
//   {"op": "create", "id", "topics": [names], "partitions": N}     admin.createTopics (replication factor 1)
//   {"op": "producer", "id", "name", "client": {Kafka options}, "props": {producer options}}
//        a Kafka instance (clientId, requestTimeout, retry, ...) and its producer, connected, called name
//   {"op": "send", "id", "name", "topic", "partition", "values": [..], "timeout_ms"}
//        one producer.send (acks -1) of every value: "offsets" (one per value), "send_ms" (fractional), "error":
//        null | [name, message], and "requests" / "timeouts": the producer's cumulative count of answered requests
//        and of request timeouts per API (its instrumentation events network.request / network.request_timeout)
//   {"op": "fault", "id", "rule": {...}}                           POST HTTP_BASE/v1/faults -> "status", "body"
//   {"op": "read", "id", "topics": [names], "timeout_ms"}          a consumer (a fresh group) from the beginning up
//        to the end offsets of admin.fetchTopicOffsets: "records": {topic: [[partition, offset, value], ...]} (each
//        offset once, in offset order), "end": {topic: {partition: end offset}}
//   {"op": "close", "id"}                                          disconnects every producer, exits 0
//
// Every wait is bounded; an exception answers that command only ("ok": false, "exception": [name, message]).
'use strict'
const http = require('http')
const readline = require('readline')
const { Kafka, logLevel } = require('kafkajs')

const [bootstrap, httpBase] = process.argv.slice(2)
const producers = new Map()
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

function out (o) { process.stdout.write(JSON.stringify(o) + '\n') }

function errInfo (e) { return [e.name || e.constructor.name, String(e.message)] }

function withTimeout (p, ms, what) {
  let t
  return Promise.race([p, new Promise((resolve, reject) => { t = setTimeout(() => reject(new Error(what + ' timed out after ' + ms + ' ms')), ms) })])
    .finally(() => clearTimeout(t))
}

function kafka (options) {
  return new Kafka(Object.assign({ brokers: [bootstrap], logLevel: logLevel.NOTHING, connectionTimeout: 5000, requestTimeout: 10000 }, options))
}

async function create (cmd, res) {
  const admin = kafka({ clientId: 'faults-kafkajs-admin' }).admin()
  await withTimeout(admin.connect(), 10000, 'admin connect')
  try {
    await withTimeout(admin.createTopics({ waitForLeaders: true, topics: cmd.topics.map(topic => ({ topic, numPartitions: cmd.partitions || 1, replicationFactor: 1 })) }), 20000, 'createTopics')
  } finally {
    await admin.disconnect().catch(() => {})
  }
  res.ok = true
}

async function producer (cmd, res) {
  const p = kafka(cmd.client || {}).producer(cmd.props || {})
  const entry = { p, requests: {}, timeouts: {} }
  p.on(p.events.REQUEST, ({ payload }) => { entry.requests[payload.apiName] = (entry.requests[payload.apiName] || 0) + 1 })
  p.on(p.events.REQUEST_TIMEOUT, ({ payload }) => { entry.timeouts[payload.apiName] = (entry.timeouts[payload.apiName] || 0) + 1 })
  await withTimeout(p.connect(), 10000, 'producer connect')
  const old = producers.get(cmd.name)
  producers.set(cmd.name, entry)
  if (old) await old.p.disconnect().catch(() => {})
  res.ok = true
}

async function send (cmd, res) {
  const entry = producers.get(cmd.name)
  const t0 = process.hrtime.bigint()
  try {
    const r = await withTimeout(entry.p.send({ topic: cmd.topic, acks: -1, timeout: 10000, messages: cmd.values.map(value => ({ value, partition: cmd.partition || 0 })) }), cmd.timeout_ms || 30000, 'send')
    const base = Number(r[0].baseOffset)
    res.offsets = cmd.values.map((v, i) => base + i)
    res.error = null
    res.ok = r.length === 1 && r[0].errorCode === 0
  } catch (e) {
    res.offsets = cmd.values.map(() => -1)
    res.error = errInfo(e)
    res.ok = false
  }
  res.send_ms = Number(process.hrtime.bigint() - t0) / 1e6
  res.requests = Object.assign({}, entry.requests)
  res.timeouts = Object.assign({}, entry.timeouts)
}

function fault (cmd, res) {
  const body = JSON.stringify(cmd.rule)
  return new Promise((resolve, reject) => {
    const req = http.request(httpBase + '/v1/faults', { method: 'POST', timeout: 10000, headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) } }, r => {
      let text = ''
      r.setEncoding('utf8')
      r.on('data', d => { text += d })
      r.on('end', () => {
        res.status = r.statusCode
        try { res.body = JSON.parse(text) } catch (e) { res.body = text }
        res.ok = r.statusCode === 201
        resolve()
      })
    })
    req.on('timeout', () => req.destroy(new Error('POST /v1/faults timed out')))
    req.on('error', reject)
    req.end(body)
  })
}

async function read (cmd, res) {
  const k = kafka({ clientId: 'faults-kafkajs-reader' })
  const deadline = Date.now() + (cmd.timeout_ms || 30000)
  const admin = k.admin()
  await withTimeout(admin.connect(), 10000, 'admin connect')
  const end = {}
  try {
    for (const topic of cmd.topics) {
      end[topic] = {}
      for (const o of await withTimeout(admin.fetchTopicOffsets(topic), 10000, 'fetchTopicOffsets')) end[topic][o.partition] = Number(o.high)
    }
  } finally {
    await admin.disconnect().catch(() => {})
  }
  const seen = {}
  for (const topic of cmd.topics) seen[topic] = new Map()
  const done = () => cmd.topics.every(t => Object.entries(end[t]).every(([p, high]) => high === 0 || seen[t].has(p + ':' + (high - 1))))
  const con = k.consumer({ groupId: 'faults-kafkajs-read-' + Date.now(), maxWaitTimeInMs: 200, sessionTimeout: 10000, rebalanceTimeout: 10000 })
  await withTimeout(con.connect(), 10000, 'consumer connect')
  try {
    for (const topic of cmd.topics) await con.subscribe({ topic, fromBeginning: true })
    await con.run({
      autoCommit: false,
      eachMessage: async ({ topic, partition, message }) => {
        seen[topic].set(partition + ':' + message.offset, [partition, Number(message.offset), message.value.toString()])
      }
    })
    while (!done() && Date.now() < deadline) await sleep(50)
  } finally {
    await withTimeout(con.disconnect(), 10000, 'consumer disconnect').catch(() => {})
  }
  res.records = {}
  for (const topic of cmd.topics) res.records[topic] = Array.from(seen[topic].values()).sort((a, b) => a[0] - b[0] || a[1] - b[1])
  res.end = end
  res.ok = done()
  if (!res.ok) res.error = 'not at the end offsets within the timeout'
}

async function main () {
  out({ info: 'kafkajs ' + require('kafkajs/package.json').version })
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity })
  for await (const line of rl) {
    if (!line.trim()) continue
    const cmd = JSON.parse(line)
    const res = { id: cmd.id }
    const t0 = Date.now()
    try {
      if (cmd.op === 'close') {
        for (const { p } of producers.values()) await withTimeout(p.disconnect(), 5000, 'producer disconnect').catch(() => {})
        res.ok = true
        out(res)
        process.exit(0)
      }
      const fn = { create, producer, send, fault, read }[cmd.op]
      if (!fn) throw new Error('unknown op ' + cmd.op)
      await fn(cmd, res)
    } catch (e) { // one command's crash is that command's answer
      res.ok = false
      res.exception = errInfo(e)
    }
    res.ms = Date.now() - t0
    out(res)
  }
  process.exit(0)
}

main().catch(e => { out({ fatal: true, exception: errInfo(e) }); process.exit(1) })
