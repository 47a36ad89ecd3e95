// @kafkajs/confluent-schema-registry against Tidelog's registry, records through the broker with kafkajs.
//
//   node schemas.js --brokers B --registry URL --topic T --type avro|json
//
// Registers version 1 of TOPIC-value (with BACKWARD compatibility, which the client sets on a first
// registration), registers it again (the same id), asks the compatibility endpoint about an allowed
// and a refused version 2, registers the refused one (409) and the allowed one, encodes one record per
// version with the client's wire format and produces them with kafkajs, produces one record without
// the framing, then consumes the topic back and decodes each record with a fresh registry client (the
// schema fetched by the id in the record). One JSON line per step on stdout
// ({"step": ..., ...}); tests/js/test_kafkajs.py decides what is right. Exit 1 on a failure it did not expect.
'use strict'

const { Kafka, logLevel } = require('kafkajs')
const { SchemaRegistry, SchemaType } = require('@kafkajs/confluent-schema-registry')
const { args, emit, errorText } = require('./common')

const EVOLUTIONS = {
  avro: {
    type: SchemaType.AVRO,
    v1: { type: 'record', name: 'User', namespace: 'tidelog.test', fields: [{ name: 'name', type: 'string' }] },
    // a new field with a default: readers of version 2 read version 1's data
    v2: {
      type: 'record', name: 'User', namespace: 'tidelog.test',
      fields: [{ name: 'name', type: 'string' }, { name: 'age', type: 'int', default: 0 }],
    },
    // a new field without one: they cannot
    incompatible: {
      type: 'record', name: 'User', namespace: 'tidelog.test',
      fields: [{ name: 'name', type: 'string' }, { name: 'email', type: 'string' }],
    },
  },
  json: {
    type: SchemaType.JSON,
    v1: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'], additionalProperties: false },
    v2: {
      type: 'object', properties: { name: { type: 'string' }, age: { type: 'integer' } }, required: ['name'],
      additionalProperties: false,
    },
    // a new required property: version 1's documents lack it
    incompatible: {
      type: 'object', properties: { name: { type: 'string' }, email: { type: 'string' } }, required: ['name', 'email'],
      additionalProperties: false,
    },
  },
}

async function main () {
  const opts = args(process.argv.slice(2))
  const evolution = EVOLUTIONS[opts.type]
  if (!evolution) throw new Error('--type must be avro or json')
  const subject = `${opts.topic}-value`
  const registry = new SchemaRegistry({ host: opts.registry })
  const schema = (obj) => ({ type: evolution.type, schema: JSON.stringify(obj) })

  const first = await registry.register(schema(evolution.v1), { subject })
  const again = await registry.register(schema(evolution.v1), { subject })
  const config = await registry.api.Subject.config({ subject })
  emit({ step: 'register-v1', id: first.id, again_id: again.id, compatibility: config.data().compatibilityLevel })

  for (const [step, obj] of [['check-allowed', evolution.v2], ['check-refused', evolution.incompatible]]) {
    const body = { schemaType: evolution.type === SchemaType.AVRO ? undefined : evolution.type, schema: JSON.stringify(obj) }
    const answer = await registry.api.Subject.compatible({ subject, version: 'latest', body })
    emit({ step, compatible: answer.data().is_compatible })
  }
  try {
    await registry.register(schema(evolution.incompatible), { subject })
    emit({ step: 'register-refused', status: 0 })
  } catch (e) {
    emit({ step: 'register-refused', status: e.status, error: errorText(e) })
  }
  const second = await registry.register(schema(evolution.v2), { subject })
  const latest = await registry.api.Subject.latestVersion({ subject })
  emit({ step: 'register-v2', id: second.id, latest: latest.data().version, latest_id: latest.data().id })

  const kafka = new Kafka({ clientId: 'tidelog-js-sr', brokers: opts.brokers.split(','), logLevel: logLevel.NOTHING })
  const producer = kafka.producer()
  await producer.connect()
  const values = [{ name: 'ada' }, { name: 'grace', age: 36 }]
  for (const [i, value] of values.entries()) {
    const encoded = await registry.encode([first.id, second.id][i], value)
    const [meta] = await producer.send({ topic: opts.topic, messages: [{ value: encoded }] })
    emit({ step: 'produce', schema_id: encoded.readInt32BE(1), offset: Number(meta.baseOffset), error: '' })
  }
  try {
    await producer.send({ topic: opts.topic, messages: [{ value: Buffer.from('{"name": "no framing"}') }] })
    emit({ step: 'produce-plain', error: '' })
  } catch (e) {
    emit({ step: 'produce-plain', error: errorText(e), type: e.type || '' })
  }
  await producer.disconnect()

  // a fresh client: nothing cached, each record's schema is fetched by the id it carries
  const reader = new SchemaRegistry({ host: opts.registry })
  const consumer = kafka.consumer({ groupId: `${opts.topic}-reader` })
  await consumer.connect()
  await consumer.subscribe({ topic: opts.topic, fromBeginning: true })
  let pending = values.length
  await new Promise((resolve, reject) => {
    consumer.run({
      eachMessage: async ({ message }) => {
        try {
          const decoded = await reader.decode(message.value)
          emit({ step: 'consume', offset: Number(message.offset), schema_id: message.value.readInt32BE(1), value: decoded })
        } catch (e) {
          emit({ step: 'consume', offset: Number(message.offset), error: errorText(e) })
        }
        if (--pending === 0) resolve()
      },
    }).catch(reject)
  })
  await consumer.disconnect()
}

main().then(() => process.exit(0), (e) => {
  process.stderr.write(`schemas.js: ${e && e.stack ? e.stack : e}\n`)
  process.exit(1)
})
