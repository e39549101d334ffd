/**
 * `npm run bench:avro` (issue #69): Avro as real producers write it. The `wide` records through Python's
 * confluent-kafka `AvroSerializer` and the registry (`["null", T]` unions, decimals as bytes, timestamps as
 * microseconds: what fastavro writes), against the same records as JSON text, each drained into the
 * emulator in the default mode (storage-write) by the job compiled as the image runs it: BENCH_AVRO_ROUNDS
 * (8) paired rounds of BENCH_RECORDS (40,000), the order alternating. Printed: CPU µs a record from the
 * first fetch, each round's Avro/JSON ratio and their median (the aim: at most 1.00).
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PubSub } from '@google-cloud/pubsub';
import { stackEnv } from '../stack/stack-env.js';
import { pythonProduce } from '../test/support/producers.js';
import { wideAvroSchema } from './avro-shape.js';
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
  await new PubSub({
    projectId: stack.GOOGLE_CLOUD_PROJECT,
    apiEndpoint: stack.PUBSUB_EMULATOR_HOST,
  }).createTopic(`${run}-dlq`);

  const json: Result[] = [];
  const avro: Result[] = [];
  const avroEnv = { VALUE_FORMAT: 'avro', BQ_SCHEMA_FILE: '', BQ_WRITE_MODE: 'storage-write' };
  for (let i = 0; i < rounds; i++) {
    const runJson = async () =>
      json.push(
        await variant('bigquery', jsonTopic, records, `${run}-j${i}`, { BQ_WRITE_MODE: 'storage-write' }),
      );
    const runAvro = async () =>
      avro.push(await variant('bigquery', avroTopic, records, `${run}-a${i}`, avroEnv));
    if (i % 2 === 0) {
      await runJson();
      await runAvro();
    } else {
      await runAvro();
      await runJson();
    }
  }
  const ratios = avro.map((a, i) => cpuPerRecord(a) / cpuPerRecord(json[i]!));
  const rows = (r: Result[]) => r.map((x) => x.records).join('/');
  return [
    `Avro through Python's AvroSerializer vs the same records as JSON, storage-write, ${records} wide records, ${rounds} paired rounds (order alternating), CPU µs a record from the first fetch: Avro ${avro.map((r) => cpuPerRecord(r).toFixed(1)).join(' / ')}, JSON ${json.map((r) => cpuPerRecord(r).toFixed(1)).join(' / ')}; each round's ratio ${ratios.map((x) => x.toFixed(2)).join(' / ')}, their median ${median(ratios).toFixed(2)} (aim ≤ 1.00); records ${rows(avro)} vs ${rows(json)}`,
  ];
}

/** The values file's records as Python's confluent-kafka AvroSerializer writes them, through the registry. */
async function produceAvroFromPython(topic: string, valuesFile: string): Promise<void> {
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
