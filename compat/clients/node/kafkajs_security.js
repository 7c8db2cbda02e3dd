// Security driver for kafkajs 2.2.4, used by tests/integration/security/security_test.py: TLS, mTLS and SASL
// PLAIN / SCRAM-SHA-256 / SCRAM-SHA-512 (kafkajs has no unsecured OAUTHBEARER token of its own).
//
//   node kafkajs_security.js SPEC.json
//
// SPEC.json: {"cases": [case, ...]}, each answered by one JSON line on stdout:
//   {"kind": "roundtrip", "name", "conf", "topic", "records", "timeout"}: produce records (value "<name>-<i>",
//       acks=-1) to partition 0, then read them back with a consumer group from the beginning
//   {"kind": "connect", "name", "conf", "timeout"}: admin connect + fetchTopicMetadata; the error's name/message
// conf: {"brokers": [...], "ssl": null | {"ca": path, "cert": path, "key": path, "maxVersion"}, "sasl": null |
//        {"mechanism": "plain"|"scram-sha-256"|"scram-sha-512", "username", "password"}}
// Every wait is bounded.
'use strict'
const fs = require('fs')
const { Kafka, logLevel } = require('kafkajs')

function out (o) { process.stdout.write(JSON.stringify(o) + '\n') }
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

function kafka (conf, name) {
  const c = {
    clientId: 'sec-kafkajs-' + name,
    brokers: conf.brokers,
    logLevel: logLevel.NOTHING,
    connectionTimeout: 5000,
    authenticationTimeout: 5000,
    requestTimeout: 10000,
    retry: { retries: conf.retries === undefined ? 3 : conf.retries, initialRetryTime: 200, maxRetryTime: 1000 }
  }
  if (conf.ssl) {
    c.ssl = { rejectUnauthorized: true }
    if (conf.ssl.ca) c.ssl.ca = [fs.readFileSync(conf.ssl.ca, 'utf-8')]
    if (conf.ssl.cert) c.ssl.cert = fs.readFileSync(conf.ssl.cert, 'utf-8')
    if (conf.ssl.key) c.ssl.key = fs.readFileSync(conf.ssl.key, 'utf-8')
    if (conf.ssl.maxVersion) c.ssl.maxVersion = conf.ssl.maxVersion
  }
  if (conf.sasl) c.sasl = conf.sasl
  return new Kafka(c)
}

function withTimeout (p, ms, what) {
  let t
  return Promise.race([p, new Promise((resolve, reject) => { t = setTimeout(() => reject(new Error(what + ' timed out after ' + ms + ' ms')), ms) })])
    .finally(() => clearTimeout(t))
}

function errInfo (e) {
  const chain = []
  for (let x = e; x && chain.length < 6; x = x.originalError || x.cause) chain.push([x.name || x.constructor.name, String(x.message)])
  return { error_type: e.name || e.constructor.name, error: String(e.message), error_chain: chain }
}

async function roundtrip (c) {
  const k = kafka(c.conf, c.name)
  const deadline = Date.now() + (c.timeout || 30) * 1000
  const values = []
  for (let i = 0; i < c.records; i++) values.push(`${c.name}-${i}`)
  const p = k.producer({ allowAutoTopicCreation: true })
  await withTimeout(p.connect(), 15000, 'producer connect')
  let produced = 0
  try {
    await withTimeout(p.send({ topic: c.topic, acks: -1, messages: values.map(v => ({ value: v, partition: 0 })) }), 20000, 'send')
    produced = values.length
  } finally {
    await p.disconnect()
  }
  const got = []
  const con = k.consumer({ groupId: 'sec-kafkajs-' + c.name, maxWaitTimeInMs: 300, sessionTimeout: 10000, rebalanceTimeout: 10000 })
  await withTimeout(con.connect(), 15000, 'consumer connect')
  try {
    await con.subscribe({ topic: c.topic, fromBeginning: true })
    await con.run({ autoCommit: false, eachMessage: async ({ partition, message }) => { got.push(message.value.toString()) } })
    while (got.length < values.length && Date.now() < deadline) await sleep(100)
  } finally {
    await withTimeout(con.disconnect(), 10000, 'consumer disconnect').catch(() => {})
  }
  return { ok: JSON.stringify(got) === JSON.stringify(values), produced, consumed: got }
}

async function connect (c) {
  const k = kafka(Object.assign({ retries: 0 }, c.conf), c.name)
  const admin = k.admin()
  try {
    await withTimeout(admin.connect(), (c.timeout || 8) * 1000, 'admin connect')
    const md = await withTimeout(admin.fetchTopicMetadata({ topics: [] }), (c.timeout || 8) * 1000, 'metadata')
    return { ok: true, topics: md.topics.length }
  } finally {
    await admin.disconnect().catch(() => {})
  }
}

async function main () {
  const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf-8'))
  out({ info: 'kafkajs ' + require('kafkajs/package.json').version })
  for (const c of spec.cases) {
    const t0 = Date.now()
    let r
    try {
      r = await (c.kind === 'roundtrip' ? roundtrip(c) : connect(c))
    } catch (e) {
      r = Object.assign({ ok: false }, errInfo(e))
    }
    r.name = c.name
    r.ms = Date.now() - t0
    out(r)
  }
  out({ done: true })
  process.exit(0)
}

main().catch(e => { out(Object.assign({ fatal: true }, errInfo(e))); process.exit(1) })
