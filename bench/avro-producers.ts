/**
 * `npm run bench:avro` (issue #69): Avro as real producers write it. The `wide` records through Python's
 * confluent-kafka `AvroSerializer` and the registry (`["null", T]` unions, decimals as bytes, timestamps as
 * microseconds: what fastavro writes), against the same records as JSON text and as the bench's own Avro
 * (avsc's, bench/avro-shape.ts: the same schema, registered the same way), each drained into the emulator
 * in the default mode (storage-write) by the job compiled as the image runs it: BENCH_AVRO_ROUNDS (8)
 * rounds of BENCH_RECORDS (40,000), the three in a rotating order. Printed: CPU µs a record from the first
 * fetch, each round's ratios to JSON and their medians (the aim for Python's: at most 1.00).
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PubSub } from '@google-cloud/pubsub';
import { stackEnv } from '../stack/stack-env.js';
import { createTopic } from '../test/support/kafka.js';
import { pythonProduce } from '../test/support/producers.js';
import { wideAvroSchema, wideAvroValue } from './avro-shape.js';
import { produce } from './produce.js';
import { wide } from './shapes.js';
import { compileVariants, cpuPerRecord, median, type Result, variantRunner } from './variant-run.js';

const records = Number(process.env.BENCH_RECORDS ?? 40_000);
const rounds = Number(process.env.BENCH_AVRO_ROUNDS ?? 8);
const partitions = 4;

export async function avroProducers(): Promise<string[]> {
  if (rounds === 0) return [];
  compileVariants();
  const stack = stackEnv() as unknown as Record<string, string>;
  const run = `bench-avro-${Date.now().toString(36)}`;
  const schemaFile = join(tmpdir(), `${run}.schema.json`);
  writeFileSync(schemaFile, JSON.stringify(wide.schema));
  const variant = variantRunner({ stack, run, schemaFile, shape: 'wide' });
  const jsonTopic = `${run}-json`;
  const avroTopic = `${run}-avro`;
  console.log(`avro bench: producing ${records} wide records as JSON and through Python's AvroSerializer...`);
  await produce(stack.KAFKA_BROKERS!, jsonTopic, records, partitions, wide.value);
  // The same records, as Python values (Decimal, date, datetime) for the serializer to write.
  const valuesFile = join(tmpdir(), `${run}.values.jsonl`);
  writeFileSync(valuesFile, Array.from({ length: records }, (_, i) => wide.value(i)).join('\n'));
  await produceAvroFromPython(avroTopic, valuesFile);
  const avscTopic = `${run}-avsc`;
  const schemaId = await registerAvro(stack.SCHEMA_REGISTRY_URL!, avscTopic);
  await produce(stack.KAFKA_BROKERS!, avscTopic, records, partitions, (i) => wideAvroValue(i, schemaId));
  await new PubSub({
    projectId: stack.GOOGLE_CLOUD_PROJECT,
    apiEndpoint: stack.PUBSUB_EMULATOR_HOST,
  }).createTopic(`${run}-dlq`);

  const avroEnv = { VALUE_FORMAT: 'avro', BQ_SCHEMA_FILE: '', BQ_WRITE_MODE: 'storage-write' };
  const sides = [
    { name: 'JSON', topic: jsonTopic, env: { BQ_WRITE_MODE: 'storage-write' }, runs: [] as Result[] },
    { name: "Python's Avro", topic: avroTopic, env: avroEnv, runs: [] as Result[] },
    { name: "avsc's Avro", topic: avscTopic, env: avroEnv, runs: [] as Result[] },
  ];
  for (let i = 0; i < rounds; i++)
    for (let k = 0; k < sides.length; k++) {
      const side = sides[(i + k) % sides.length]!;
      side.runs.push(await variant('bigquery', side.topic, records, `${run}-${i}${k}`, side.env));
    }
  const [json, ...avros] = sides;
  // BENCH_DUMP: every run's result (its threads' CPU among them) as JSON, to look into.
  if (process.env.BENCH_DUMP) writeFileSync(process.env.BENCH_DUMP, JSON.stringify(sides, null, 1));
  const cpu = (r: Result[]) => r.map((x) => cpuPerRecord(x).toFixed(1)).join(' / ');
  return [
    `Avro as producers write it vs the same records as JSON, storage-write, ${records} wide records, ${rounds} rounds (the order rotating), CPU µs a record from the first fetch: JSON ${cpu(json!.runs)}`,
    ...avros.map((side) => {
      const ratios = side.runs.map((a, i) => cpuPerRecord(a) / cpuPerRecord(json!.runs[i]!));
      return `  ${side.name} ${cpu(side.runs)}; each round's ratio to JSON ${ratios.map((x) => x.toFixed(2)).join(' / ')}, their median ${median(ratios).toFixed(2)}${side === avros[0] ? ' (aim ≤ 1.00)' : ''}; records ${side.runs.every((r) => r.records === records) ? 'all' : 'NOT all'} drained`;
    }),
  ];
}

/** The wide Avro schema registered for the topic's subject (as drain-bench.ts does); its id. */
async function registerAvro(registry: string, topic: string): Promise<number> {
  const response = await fetch(`${registry}/subjects/${topic}-value/versions`, {
    method: 'POST',
    headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
    body: JSON.stringify({ schema: JSON.stringify(wideAvroSchema) }),
  });
  if (!response.ok)
    throw new Error(`registering the Avro schema: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { id: number }).id;
}

/** The values file's records as Python's confluent-kafka AvroSerializer writes them, through the registry. */
async function produceAvroFromPython(topic: string, valuesFile: string): Promise<void> {
  await createTopic(topic, partitions);
  const value = `{**v, 'amount': Decimal(v['amount']), 'tax': Decimal(v['tax']), 'discount': Decimal(v['discount']), 'order_date': date.fromisoformat(v['order_date']), 'created_at': datetime.fromisoformat(v['created_at'].replace('Z', '+00:00')), 'updated_at': datetime.fromisoformat(v['updated_at'].replace('Z', '+00:00')), 'lines': [{**l, 'price': Decimal(l['price'])} for l in v['lines']]}`;
  const sent = await pythonProduce({
    topic,
    format: 'avro',
    schema: JSON.stringify(wideAvroSchema),
    values: `[(lambda v: ${value})(json.loads(line)) for line in open(${JSON.stringify(valuesFile)})]`,
  });
  if (sent !== records) throw new Error(`Python's producer delivered ${sent} of ${records} records`);
}

if (import.meta.url === `file://${process.argv[1]}`)
  for (const line of await avroProducers()) console.log(line);
