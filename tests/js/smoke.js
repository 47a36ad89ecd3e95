// kafkajs on its own against Tidelog: a topic created with its admin client, records (keys, headers,
// two partitions) produced and consumed back by a group member, and every request's API and version
// as kafkajs negotiated them (its REQUEST instrumentation events).
//
//   node smoke.js --brokers B --topic T --count N
//
// Prints {"step": "produced", ...}, one {"step": "consumed", ...} per record, then
// {"step": "requests", "versions": {"Produce": [v], ...}}; tests/js/test_kafkajs.py decides what is right.
'use strict'

const { Kafka, logLevel } = require('kafkajs')
const { args, emit } = require('./common')

async function main () {
  const opts = args(process.argv.slice(2))
  const count = Number(opts.count)
  const kafka = new Kafka({ clientId: 'tidelog-js-smoke', brokers: opts.brokers.split(','), logLevel: logLevel.NOTHING })
  const versions = {}
  const record = (e) => {
    const seen = versions[e.payload.apiName] || (versions[e.payload.apiName] = [])
    if (!seen.includes(e.payload.apiVersion)) seen.push(e.payload.apiVersion)
  }

  const admin = kafka.admin()
  admin.on(admin.events.REQUEST, record)
  await admin.connect()
  const created = await admin.createTopics({ topics: [{ topic: opts.topic, numPartitions: 2 }], waitForLeaders: true })
  const metadata = await admin.fetchTopicMetadata({ topics: [opts.topic] })
  emit({ step: 'created', created, partitions: metadata.topics[0].partitions.length })
  await admin.disconnect()

  const producer = kafka.producer()
  producer.on(producer.events.REQUEST, record)
  await producer.connect()
  const messages = []
  for (let i = 0; i < count; i++) {
    messages.push({ partition: i % 2, key: `k${i}`, value: `v${i}`, headers: { n: String(i) } })
  }
  const results = await producer.send({ topic: opts.topic, messages, acks: -1 })
  emit({ step: 'produced', results: results.map((r) => ({ partition: r.partition, errorCode: r.errorCode, baseOffset: r.baseOffset })) })
  await producer.disconnect()

  const consumer = kafka.consumer({ groupId: `${opts.topic}-group` })
  consumer.on(consumer.events.REQUEST, record)
  await consumer.connect()
  await consumer.subscribe({ topic: opts.topic, fromBeginning: true })
  let pending = count
  await new Promise((resolve, reject) => {
    consumer.run({
      eachMessage: async ({ partition, message }) => {
        emit({
          step: 'consumed', partition, offset: Number(message.offset), key: message.key.toString(),
          value: message.value.toString(), header: message.headers.n.toString(),
        })
        if (--pending === 0) resolve()
      },
    }).catch(reject)
  })
  await consumer.disconnect()
  for (const name of Object.keys(versions)) versions[name].sort((a, b) => a - b)
  emit({ step: 'requests', versions })
}

main().then(() => process.exit(0), (e) => {
  process.stderr.write(`smoke.js: ${e && e.stack ? e.stack : e}\n`)
  process.exit(1)
})
