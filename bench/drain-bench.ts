/**
 * `npm run bench`: the same records, measured side by side in one run, each variant in a process of its
 * own reading from offset 0. The records are `wide` (27 columns of every common type, about 800 bytes of
 * JSON: production's shape) unless BENCH_SHAPE=narrow (3 fields, about 1 KB, one long string). Produces N
 * records to P partitions (and 4N to another topic), then measures, per variant, process CPU per record
 * (user + system, from the first record fetched; for the drains also net of an idle run's whole CPU),
 * rows/s and peak RSS:
 * - (a) a bare kafkajs consumer that `JSON.parse`s each value (the least any JSON drain does);
 * - (w) a bare Storage Write API writer with the official `JSONWriter` (one PENDING stream, 500-row
 *   appends, the same rows with metadata columns), no Kafka;
 * - (b) our drain with a null sink, on N and on 4N records (does memory follow the batch, or the input?),
 *   and on N with the sink taking 1 ms a row (what waiting on a slow BigQuery costs in CPU);
 * - (c) our drain into the BigQuery emulator once per write mode (storage-write, insert-all, merge and load on
 *   the N records; cdc as upserts keyed by order on M, as the emulator's change data capture slows down as
 *   the table grows), and an idle run (start-up alone);
 * - 1, 2 and 4 tasks of one execution (separate processes) on N records of a 16-partition topic, each
 *   task's exit code, stop reason, records and shared partitions;
 * - 1,000 partitions (10 topics x 100, 3 records each): a run that drains them all, then an idle run;
 * - the same wide records as Avro, Protobuf and JSON Schema through the registry: storage-write at N (three
 *   rounds) and 4N (three paired rounds), insert-all and load at N, and the null sink, beside JSON's; and
 *   the record path alone in this process, per format, the general path against the compiled one
 *   (record-path.ts), and cdc mode's on Debezium's Avro change events (debezium-path.ts).
 * Firestore reads and writes are counted for every drain. Results are printed and written to
 * `bench/results/<run>.json` so that runs can be compared. Timing goals live here, never in tests.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PubSub } from '@google-cloud/pubsub';
import { stackEnv } from '../stack/stack-env.js';
import { imageNodeFlags } from '../test/support/image-flags.js';
import { wideAvroSchema, wideAvroValue } from './avro-shape.js';
import { produce as produceTo } from './produce.js';
import { recordPathFigures } from './record-path.js';
import { wideJsonSchema, wideJsonSchemaValue, wideProto, wideProtobufValue } from './registry-shapes.js';
import { shapeNamed } from './shapes.js';
import { compileVariants, cpuPerRecord, median, type Result, variantRunner } from './variant-run.js';

const root = join(import.meta.dirname, '..');
/** The job image's V8 flags (its ENTRYPOINT): every variant runs with them, as production does. */
compileVariants();
const stack = stackEnv() as unknown as Record<string, string>;
const records = Number(process.env.BENCH_RECORDS ?? 20_000);
const partitions = Number(process.env.BENCH_PARTITIONS ?? 4);
/** Records per batch: the product's default unless BENCH_BATCH says otherwise. */
const batch = process.env.BENCH_BATCH;
/** cdc mode on the emulator slows down as the table grows (20,000 upserts took 7 minutes): it gets fewer. */
const cdcRecords = Number(process.env.BENCH_CDC_RECORDS ?? 1_000);
/** The 1,000-partition scenario: topics x partitions each, records per partition (0 skips it). */
const wideTopics = Number(process.env.BENCH_WIDE_TOPICS ?? 10);
const widePartitions = Number(process.env.BENCH_WIDE_PARTITIONS ?? 100);
const wideRecords = 3;
const shape = shapeNamed(process.env.BENCH_SHAPE);
const run = `bench-${Date.now().toString(36)}`;
const benchStarted = Date.now();

/** Registers a schema (the wide shape in a format) for the topic's subject; its schema id. */
async function registerSchema(topic: string, schemaType: string, schema: string): Promise<number> {
  const response = await fetch(`${stack.SCHEMA_REGISTRY_URL}/subjects/${topic}-value/versions`, {
    method: 'POST',
    headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
    body: JSON.stringify({ schema, ...(schemaType === 'AVRO' ? {} : { schemaType }) }),
  });
  if (!response.ok)
    throw new Error(`registering the ${schemaType} schema: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { id: number }).id;
}

async function produce(
  topic: string,
  count: number,
  topicPartitions: number,
  value: (i: number) => string | Buffer = shape.value,
): Promise<void> {
  await produceTo(stack.KAFKA_BROKERS!, topic, count, topicPartitions, value);
}

const schemaFile = join(tmpdir(), `${run}.schema.json`);
writeFileSync(schemaFile, JSON.stringify(shape.schema));
const variant = variantRunner({ stack, run, schemaFile, shape: shape.name, batch });

const startupMs = (r: Result) => (r.firstFetchAt ?? r.endedAt) - r.startedAt;
const drainMs = (r: Result) => Math.max(1, (r.lastDoneAt ?? r.endedAt) - (r.firstFetchAt ?? r.startedAt));
const wholeMs = (r: Result) => r.endedAt - r.startedAt;
const drainRate = (r: Result) => Math.round((r.records / drainMs(r)) * 1000);
const per10k = (n: number, r: Result) => (r.records === 0 ? 0 : Math.round((n / r.records) * 10_000));

/** The tasks of one execution, as separate processes at once; one time line from first start to last commit. */
async function execution(tasks: number, topic: string, count: number) {
  const pipeline = `${run}-x${tasks}`;
  const results = await Promise.all(
    Array.from({ length: tasks }, (_, i) =>
      variant('bigquery', topic, count, pipeline, {
        CLOUD_RUN_TASK_COUNT: String(tasks),
        CLOUD_RUN_TASK_INDEX: String(i),
        CLOUD_RUN_EXECUTION: `${pipeline}-e1`,
      }),
    ),
  );
  const first = Math.min(...results.map((r) => r.firstFetchAt ?? r.endedAt));
  const last = Math.max(...results.map((r) => r.lastDoneAt ?? r.endedAt));
  const drained = results.reduce((n, r) => n + r.records, 0);
  return {
    tasks,
    records: drained,
    drainMs: last - first,
    wholeMs: Math.max(...results.map((r) => r.endedAt)) - Math.min(...results.map((r) => r.startedAt)),
    rate: Math.round((drained / Math.max(1, last - first)) * 1000),
    perTask: results.map((r) => r.records),
    tasksSeen: results.map(
      (r, i) =>
        `t${i}: exit ${r.exitCode} ${r.stopReason ?? '?'}, ${r.records} records, ${r.sharedPartitions ?? 0} shared, ` +
        `first fetch +${((r.firstFetchAt ?? r.endedAt) - Math.min(...results.map((x) => x.startedAt))) / 1000} s`,
    ),
  };
}

// The record path alone, per format, general against compiled, before anything else loads the machine.
const paths = shape.name === 'wide' ? await recordPathFigures(records) : [];
console.log(`variants run with the job image's node flags: ${imageNodeFlags(root).join(' ') || 'none'}`);
console.log(
  `producing ${records} ${shape.name} records to ${partitions} partitions, ${4 * records} to another topic, ` +
    `${records} to 16 partitions, ${cdcRecords} for cdc mode and ${wideRecords} to each of ` +
    `${wideTopics} x ${widePartitions} partitions...`,
);
const topic = `${run}-n`;
const topicQuad = `${run}-4n`;
const topicTasks = `${run}-tasks`;
const topicCdc = `${run}-m`;
const wide = Array.from({ length: wideTopics }, (_, i) => `${run}-w${i}`);
await produce(topic, records, partitions);
await produce(topicQuad, 4 * records, partitions);
await produce(topicTasks, records, 16);
await produce(topicCdc, cdcRecords, partitions);
// The same N (and 4N) records as Avro, Protobuf and JSON Schema through the registry (wide shape only):
// the cost of each format, side by side with JSON's.
const formats = [
  {
    name: 'Avro',
    format: 'avro',
    type: 'AVRO',
    schema: JSON.stringify(wideAvroSchema),
    value: wideAvroValue,
  },
  { name: 'Protobuf', format: 'protobuf', type: 'PROTOBUF', schema: wideProto, value: wideProtobufValue },
  {
    name: 'JSON Schema',
    format: 'json-schema',
    type: 'JSON',
    schema: JSON.stringify(wideJsonSchema),
    value: wideJsonSchemaValue,
  },
].map((f) => ({ ...f, topic: `${run}-${f.format}`, topicQuad: `${run}-${f.format}-4n` }));
const withFormats = shape.name === 'wide';
if (withFormats)
  for (const f of formats)
    for (const [t, count] of [
      [f.topic, records],
      [f.topicQuad, 4 * records],
    ] as const) {
      const schemaId = await registerSchema(t, f.type, f.schema);
      await produce(t, count, partitions, (i) => f.value(i, schemaId));
    }
for (const t of wide) await produce(t, wideRecords * widePartitions, widePartitions);
await new PubSub({
  projectId: stack.GOOGLE_CLOUD_PROJECT,
  apiEndpoint: stack.PUBSUB_EMULATOR_HOST,
}).createTopic(`${run}-dlq`);
const producedMs = Date.now() - benchStarted;

/** CPU per record from the first record fetched (start-up left out). */
/** A run's CPU from its first fetch (start-up left out). */
const fromFirstFetch = (r: Result) => r.cpuUs - (r.cpuAtFirstFetchUs ?? 0);

/**
 * A variant run several times: a raw run over N lasts 0.1–0.2 s, and its CPU per record moves by 2x
 * from one run to the next. The run with the median CPU per record stands for its variant; every
 * figure is printed and kept.
 */
function medianOf(all: Result[]) {
  const sorted = [...all].sort((x, y) => cpuPerRecord(x) - cpuPerRecord(y));
  return { median: sorted[all.length >> 1]!, cpuPerRecordUs: all.map(cpuPerRecord) };
}

/**
 * The goals' sides at N, in five rounds of one run each, side by side (raw, storage-write, the official
 * writer): the machine's drift over the bench's minutes weighs on all alike, and the emulator's speed,
 * which bounds both writers' rows/s, moves by 20% from one run to the next. Each side's median run
 * stands; the rounds' own ratios and rows/s are printed too.
 */
const goalRounds = 5;
const rawRounds: Result[] = [];
const writeRounds: Result[] = [];
const writerRounds: Result[] = [];
for (let i = 0; i < goalRounds; i++) {
  rawRounds.push(await variant('raw', topic, records, `${run}-a${i}`));
  writeRounds.push(
    await variant('bigquery', topic, records, `${run}-c${i}`, { BQ_WRITE_MODE: 'storage-write' }),
  );
  writerRounds.push(await variant('writer', topic, records, `${run}-jw${i}`));
}
const roundRatios = rawRounds.map((r, i) => cpuPerRecord(writeRounds[i]!) / cpuPerRecord(r));
const aRuns = medianOf(rawRounds);
const a = aRuns.median;
const w = medianOf(writerRounds).median;
/** The median of the rounds' rows/s into the emulator, each side on its own. */
const medianRate = (all: Result[]) => all.map(drainRate).sort((x, y) => x - y)[all.length >> 1]!;
const b = await variant('null', topic, records, `${run}-b`);
/**
 * And at 4N, where one-time work (V8 compiling the hot paths) weighs a quarter as much: three rounds of
 * raw then storage-write, side by side as at N.
 */
const quadRounds = 3;
const rawQuad: Result[] = [];
const writeQuad: Result[] = [];
for (let i = 0; i < quadRounds; i++) {
  rawQuad.push(await variant('raw', topicQuad, 4 * records, `${run}-a4${i}`));
  writeQuad.push(
    await variant('bigquery', topicQuad, 4 * records, `${run}-c4${i}`, { BQ_WRITE_MODE: 'storage-write' }),
  );
}
const quadRatios = rawQuad.map((r, i) => cpuPerRecord(writeQuad[i]!) / cpuPerRecord(r));
const a4Runs = medianOf(rawQuad);
const a4 = a4Runs.median;
const b4 = await variant('null', topicQuad, 4 * records, `${run}-b4`);
// The null sink taking as long per row as the emulator does (1 ms): what waiting on BigQuery costs.
const bPaced = await variant('null', topic, records, `${run}-bp`, { BENCH_PACED_US_PER_ROW: '1000' });
const cRuns = medianOf(writeRounds);
const c = cRuns.median;
const c4Runs = medianOf(writeQuad);
const c4 = c4Runs.median;
// The same pipeline again: everything is caught up, so this is start-up and shut-down alone.
const idle = await variant('bigquery', topic, 0, `${run}-c0`, { BQ_WRITE_MODE: 'storage-write' });
const cInsert = await variant('bigquery', topic, records, `${run}-ci`, { BQ_WRITE_MODE: 'insert-all' });
// Merge on the same N records as the others, since the emulator's MERGE joins by index (googlesqlite-merge.patch).
const cMerge = await variant('bigquery', topic, records, `${run}-cm`, { BQ_WRITE_MODE: 'merge' });
// Load jobs (newline-delimited JSON by upload), hourly runs with the whole day's loads: no load held back.
const cLoad = await variant('bigquery', topic, records, `${run}-cl`, {
  BQ_WRITE_MODE: 'load',
  LOAD_JOBS_PER_TABLE_PER_DAY: '1500',
  SCHEDULE_PERIOD_SECONDS: '3600',
});
// Change data capture: each record an upsert of its order (the `_default` stream, no stream per flush). On
// M records: the emulator's change data capture slows down as the table grows (20,000 upserts took 7
// minutes; why was not looked into).
const cCdc = await variant('bigquery', topicCdc, cdcRecords, `${run}-cc`, {
  BQ_WRITE_MODE: 'cdc',
  CHANGE_FORMAT: 'upsert',
  BQ_PRIMARY_KEY: 'order_id',
});
/**
 * The formats: no schema file, the columns from the registry. At N in three rounds of each format's
 * storage-write (the median stands, as for JSON's), once into the null sink, and at 4N in three paired
 * rounds (the steady state is the slope from N to 4N's medians). Each is compared with JSON's on the same
 * records run beside it (a JSON round among the formats' at N; a JSON run of its own beside each 4N,
 * insert-all and load run):
 * the machine's speed drifts over the bench's minutes, and a figure from ten minutes earlier once made
 * Protobuf's 4N look 1.3x JSON's where side by side it was on a par.
 */
const formatRounds = 3;
const byFormat = formats.map((f) => ({ ...f, rounds: [] as Result[] }));
const jsonBeside: Result[] = [];
const storageWrite = { BQ_WRITE_MODE: 'storage-write' };
if (withFormats)
  for (let i = 0; i < formatRounds; i++) {
    jsonBeside.push(await variant('bigquery', topic, records, `${run}-cjson${i}`, storageWrite));
    for (const f of byFormat)
      f.rounds.push(
        await variant('bigquery', f.topic, records, `${run}-c${f.format}${i}`, {
          VALUE_FORMAT: f.format,
          BQ_SCHEMA_FILE: '',
          BQ_WRITE_MODE: 'storage-write',
        }),
      );
  }
const jsonN = withFormats ? medianOf(jsonBeside) : undefined;
/**
 * The format's run, and JSON's on the same records (from its own topic) beside it, in the same mode: JSON's
 * first unless `formatFirst`.
 */
async function paired(
  name: string,
  topicName: string,
  count: number,
  env: Record<string, string>,
  formatFirst = false,
) {
  const mode = { BQ_WRITE_MODE: env.BQ_WRITE_MODE! };
  const runJson = () =>
    variant('bigquery', count === records ? topic : topicQuad, count, `${run}-j${name}`, mode);
  const runFormat = () => variant('bigquery', topicName, count, `${run}-${name}`, env);
  if (formatFirst) {
    const format = await runFormat();
    return { json: await runJson(), format };
  }
  const json = await runJson();
  return { json, format: await runFormat() };
}
/**
 * At 4N, rounds of pairs, the order alternating: each side's median run stands (a single pair once put
 * Avro at 1.04x JSON where four paired rounds had 0.98x).
 */
const formatQuadRounds = 3;
async function pairedRounds(name: string, topicName: string, env: Record<string, string>) {
  const pairs = [];
  for (let i = 0; i < formatQuadRounds; i++)
    pairs.push(await paired(`${name}r${i}`, topicName, 4 * records, env, i % 2 === 1));
  const json = medianOf(pairs.map((p) => p.json));
  const format = medianOf(pairs.map((p) => p.format));
  return {
    json: json.median,
    format: format.median,
    rounds: { json: json.cpuPerRecordUs, format: format.cpuPerRecordUs },
  };
}
const formatRuns = withFormats
  ? await (async () => {
      const out = [];
      for (const f of byFormat) {
        const env = { VALUE_FORMAT: f.format, BQ_SCHEMA_FILE: '', BQ_WRITE_MODE: 'storage-write' };
        out.push({
          ...f,
          n: medianOf(f.rounds),
          nullSink: await variant('null', f.topic, records, `${run}-b${f.format}`, env),
          quad: await pairedRounds(`c4${f.format}`, f.topicQuad, env),
          // The modes that send rows as JSON text, once each at N (each format's compiled text path).
          insertAll: await paired(`ci${f.format}`, f.topic, records, { ...env, BQ_WRITE_MODE: 'insert-all' }),
          load: await paired(`cl${f.format}`, f.topic, records, { ...env, BQ_WRITE_MODE: 'load' }),
        });
      }
      return out;
    })()
  : [];
const executions = [];
for (const tasks of [1, 2, 4]) executions.push(await execution(tasks, topicTasks, records));
const wideSpread =
  wide.length === 0 ? undefined : await variant('bigquery', wide.join(','), 0, `${run}-w1k`, {});
const wideIdle =
  wide.length === 0 ? undefined : await variant('bigquery', wide.join(','), 0, `${run}-w1k`, {});

/** CPU per record net of the idle run's whole CPU (start-up and shut-down subtracted). */
const netCpuPerRecord = (r: Result) => (r.records === 0 ? 0 : (r.cpuUs - idle.cpuUs) / r.records);

const rows = [
  ['(a) raw kafkajs + JSON.parse', a],
  ['(w) official JSONWriter alone', w],
  ['(b) drain, null sink', b],
  ['(a) raw kafkajs + JSON.parse, 4N', a4],
  ['(b) drain, null sink, 4N', b4],
  ['(b) drain, null sink paced at 1 ms a row', bPaced],
  ['(c) drain → emulator, storage-write', c],
  ['(c) drain → emulator, storage-write, 4N', c4],
  ['(c) idle run (caught up), storage-write', idle],
  ['(c) drain → emulator, insert-all', cInsert],
  ['(c) drain → emulator, merge', cMerge],
  ['(c) drain → emulator, load', cLoad],
  ['(c) drain → emulator, cdc (upserts)', cCdc],
  ...formatRuns.flatMap((f) => [
    [`(b) drain, null sink, ${f.name} via the registry`, f.nullSink],
    [`(c) drain → emulator, storage-write, ${f.name}`, f.n.median],
    [`(c) drain → emulator, storage-write, ${f.name}, 4N`, f.quad.format],
    [`(c) drain → emulator, insert-all, ${f.name}`, f.insertAll.format],
    [`(c) drain → emulator, load, ${f.name}`, f.load.format],
  ]),
  ...(wideSpread && wideIdle
    ? [
        [`1,000 partitions: ${wideRecords} records each`, wideSpread],
        ['1,000 partitions: idle run', wideIdle],
      ]
    : []),
] as [string, Result][];
console.table(
  rows.map(([name, r]) => ({
    variant: name,
    records: r.records,
    'CPU µs/rec': cpuPerRecord(r).toFixed(1),
    'net CPU µs/rec':
      name.startsWith('(b)') || name.startsWith('(c) drain') ? netCpuPerRecord(r).toFixed(1) : '',
    'CPU s': (r.cpuUs / 1e6).toFixed(2),
    'start-up s': (startupMs(r) / 1000).toFixed(2),
    'drain s': (drainMs(r) / 1000).toFixed(2),
    'whole s': (wholeMs(r) / 1000).toFixed(2),
    'drain records/s': drainRate(r),
    'FS writes/10k': per10k(r.firestoreWrites, r),
    'peak RSS MB': r.peakRssMb,
  })),
);
console.table(
  executions.map((x) => ({
    tasks: x.tasks,
    records: x.records,
    'drain s': (x.drainMs / 1000).toFixed(2),
    'whole s': (x.wholeMs / 1000).toFixed(2),
    'records/s': x.rate,
    'records per task': x.perTask.join(' / '),
  })),
);
for (const x of executions) console.log(`${x.tasks} task(s): ${x.tasksSeen.join('; ')}`);
/**
 * Steady state: the CPU of 3N more records, per record, each run's counted from its first fetch (what
 * comes once after it, lazy loading, compiling, shut-down, cancels out). Not the whole process's CPU: its
 * start-up moved by 0.4 s between two raw runs of one bench, which made this figure 2.3 µs for raw.
 */
const slope = (small: Result, large: Result) =>
  (fromFirstFetch(large) - fromFirstFetch(small)) / Math.max(1, large.records - small.records);
const ratio = (r: Result) => cpuPerRecord(r) / cpuPerRecord(a);
const ratioBoth = (r: Result) => cpuPerRecord(r) / (cpuPerRecord(a) + cpuPerRecord(w));
const bytesPerRecord = Buffer.byteLength(shape.value(records >> 1));
const perVcpu = 1e6 / slope(c, c4);
const lines = [
  `shape ${shape.name} (${shape.schema.length} columns, ${bytesPerRecord} B a record); CPU per record from the first fetch: raw ${cpuPerRecord(a).toFixed(1)} µs, official JSONWriter ${cpuPerRecord(w).toFixed(1)} µs`,
  `drain / raw, CPU per record: storage-write ${ratio(c).toFixed(1)}x (#42's goal <= 3x, in the rounds' median: ${median(roundRatios).toFixed(2)}x), at 4N ${(cpuPerRecord(c4) / cpuPerRecord(a4)).toFixed(1)}x, insert-all ${ratio(cInsert).toFixed(1)}x, merge ${ratio(cMerge).toFixed(1)}x, load ${ratio(cLoad).toFixed(1)}x, cdc ${ratio(cCdc).toFixed(1)}x, null sink ${ratio(b).toFixed(1)}x`,
  `${goalRounds} rounds of raw then storage-write at N, CPU µs a record from the first fetch (each side's median run stands): raw ${aRuns.cpuPerRecordUs.map((x) => x.toFixed(1)).join(' / ')}, storage-write ${cRuns.cpuPerRecordUs.map((x) => x.toFixed(1)).join(' / ')}; each round's ratio ${roundRatios.map((x) => `${x.toFixed(1)}x`).join(' / ')}, their median ${median(roundRatios).toFixed(2)}x`,
  `${quadRounds} rounds of raw then storage-write at 4N: raw ${a4Runs.cpuPerRecordUs.map((x) => x.toFixed(1)).join(' / ')}, storage-write ${c4Runs.cpuPerRecordUs.map((x) => x.toFixed(1)).join(' / ')}; each round's ratio ${quadRatios.map((x) => `${x.toFixed(1)}x`).join(' / ')}`,
  `drain / (raw + official writer): storage-write ${ratioBoth(c).toFixed(2)} (goal: drain below the writer alone, ${cpuPerRecord(c).toFixed(1)} vs ${cpuPerRecord(w).toFixed(1)} µs)`,
  `steady state (CPU from the first fetch of 4N minus that of N, per record): raw ${slope(a, a4).toFixed(1)} µs, null sink ${slope(b, b4).toFixed(1)} µs, storage-write ${slope(c, c4).toFixed(1)} µs: ${(slope(c, c4) / slope(a, a4)).toFixed(1)}x raw`,
  `net of the idle run (${(idle.cpuUs / 1e6).toFixed(2)} s CPU): storage-write ${netCpuPerRecord(c).toFixed(1)} µs, insert-all ${netCpuPerRecord(cInsert).toFixed(1)} µs, merge ${netCpuPerRecord(cMerge).toFixed(1)} µs, load ${netCpuPerRecord(cLoad).toFixed(1)} µs, cdc ${netCpuPerRecord(cCdc).toFixed(1)} µs a record`,
  `one vCPU at the storage-write steady state: ${Math.round(perVcpu)} records/s, ${((perVcpu * bytesPerRecord) / 1e6).toFixed(1)} MB/s (Dataflow publishes 7.5 MB/s per vCPU: ${((perVcpu * bytesPerRecord) / 1e6 / 7.5).toFixed(2)}x)`,
  `rows/s into the emulator (drain time), ${goalRounds} rounds of storage-write vs the official writer: ${writeRounds.map((r, i) => `${drainRate(r)} vs ${drainRate(writerRounds[i]!)}`).join(' / ')}; medians ${medianRate(writeRounds)} vs ${medianRate(writerRounds)} (goal: no lower); insert-all ${drainRate(cInsert)}, merge ${drainRate(cMerge)}, load ${drainRate(cLoad)}, cdc ${drainRate(cCdc)} (on ${cdcRecords})`,
  `waiting: the null sink paced at 1 ms a row ${cpuPerRecord(bPaced).toFixed(1)} vs ${cpuPerRecord(b).toFixed(1)} µs a record (drain ${(drainMs(bPaced) / 1000).toFixed(1)} vs ${(drainMs(b) / 1000).toFixed(1)} s): CPU spent waiting on the sink`,
  `peak RSS: null sink ${b.peakRssMb} MB at N, ${b4.peakRssMb} MB at 4N (goal <= 256 MB at 4N); storage-write ${c.peakRssMb} MB; raw ${a.peakRssMb} / ${a4.peakRssMb} MB`,
  ...formatRuns.map(
    (f) =>
      `${f.name} through the registry vs the same records as JSON run beside it, CPU µs a record from the first fetch: storage-write ${cpuPerRecord(f.n.median).toFixed(1)} vs ${cpuPerRecord(jsonN!.median).toFixed(1)} (${formatRounds} rounds: ${f.n.cpuPerRecordUs.map((x) => x.toFixed(1)).join(' / ')} vs ${jsonN!.cpuPerRecordUs.map((x) => x.toFixed(1)).join(' / ')}), ${ratio(f.n.median).toFixed(1)}x raw; at 4N ${cpuPerRecord(f.quad.format).toFixed(1)} vs ${cpuPerRecord(f.quad.json).toFixed(1)} (${formatQuadRounds} paired rounds: ${f.quad.rounds.format.map((x) => x.toFixed(1)).join(' / ')} vs ${f.quad.rounds.json.map((x) => x.toFixed(1)).join(' / ')}), ${(cpuPerRecord(f.quad.format) / cpuPerRecord(a4)).toFixed(1)}x raw; steady ${slope(f.n.median, f.quad.format).toFixed(1)} vs ${slope(jsonN!.median, f.quad.json).toFixed(1)}, ${(slope(f.n.median, f.quad.format) / slope(a, a4)).toFixed(1)}x raw; null sink ${cpuPerRecord(f.nullSink).toFixed(1)} vs ${cpuPerRecord(b).toFixed(1)} (earlier); ${drainRate(f.n.median)} vs ${drainRate(jsonN!.median)} rows/s; insert-all ${cpuPerRecord(f.insertAll.format).toFixed(1)} vs ${cpuPerRecord(f.insertAll.json).toFixed(1)}, load ${cpuPerRecord(f.load.format).toFixed(1)} vs ${cpuPerRecord(f.load.json).toFixed(1)}`,
  ),
  ...(paths.length === 0
    ? []
    : [
        `the record path alone (in process, ${records} records, median of 5 rounds), CPU µs a record, general → compiled: ${paths.map((f) => `${f.format} ${f.generalUs.toFixed(1)} → ${f.compiledUs.toFixed(1)} (${(f.compiledShare * 100).toFixed(0)}% compiled)`).join(', ')}`,
      ]),
  `start-up (process ready → first record): raw ${startupMs(a)} ms, drain ${startupMs(b)} ms`,
  `Firestore writes per 10k records: ${per10k(b.firestoreWrites, b)} (null sink, ${per10k(b.commits ?? 0, b)} commits per 10k at BATCH_MAX_RECORDS=${batch ?? 'default'}), ${per10k(b4.firestoreWrites, b4)} at 4N: O(batches)`,
  `tasks (storage-write, 16 partitions, ${records} records): ${executions.map((x) => `${x.tasks} task(s) ${x.rate}/s [${x.perTask.join(', ')}]`).join(', ')} (2 cores here: expect it to flatten)`,
  ...(wideSpread && wideIdle
    ? [
        `1,000 partitions: spread run ${(wholeMs(wideSpread) / 1000).toFixed(1)} s whole (${wideSpread.records} records, ${wideSpread.commits} commits, ${wideSpread.firestoreReads} reads / ${wideSpread.firestoreWrites} writes, summary line ${wideSpread.summaryBytes} B); idle run ${(wholeMs(wideIdle) / 1000).toFixed(1)} s whole (${wideIdle.firestoreReads} reads / ${wideIdle.firestoreWrites} writes, goal <= 15 s)`,
      ]
    : []),
  `bench took ${((Date.now() - benchStarted) / 1000).toFixed(0)} s (producing ${(producedMs / 1000).toFixed(0)} s)`,
];
for (const line of lines) console.log(line);
const resultsDir = join(root, 'bench', 'results');
mkdirSync(resultsDir, { recursive: true });
const file = join(resultsDir, `${run}.json`);
writeFileSync(
  file,
  `${JSON.stringify(
    {
      run,
      at: new Date(benchStarted).toISOString(),
      settings: {
        shape: shape.name,
        records,
        partitions,
        batch: batch ?? 'default',
        cdcRecords,
        wideTopics,
        widePartitions,
        wideRecords,
      },
      variants: Object.fromEntries(
        rows.map(([name, r]) => [
          name,
          {
            ...r,
            startupMs: startupMs(r),
            drainMs: drainMs(r),
            wholeMs: wholeMs(r),
            drainRate: drainRate(r),
            cpuPerRecordUs: cpuPerRecord(r),
          },
        ]),
      ),
      executions,
      recordPath: paths,
      repeats: {
        rawN: aRuns.cpuPerRecordUs,
        rawQuad: a4Runs.cpuPerRecordUs,
        storageWriteN: cRuns.cpuPerRecordUs,
        roundRatios,
        writerN: medianOf(writerRounds).cpuPerRecordUs,
        rowsPerSecondN: { storageWrite: writeRounds.map(drainRate), writer: writerRounds.map(drainRate) },
        storageWriteQuad: c4Runs.cpuPerRecordUs,
        quadRatios,
        formatsN: Object.fromEntries(formatRuns.map((f) => [f.name, f.n.cpuPerRecordUs])),
        jsonBesideFormatsN: jsonN?.cpuPerRecordUs ?? [],
        jsonBesideFormats: Object.fromEntries(
          formatRuns.map((f) => [
            f.name,
            { quad: f.quad.json, insertAll: f.insertAll.json, load: f.load.json },
          ]),
        ),
        formatsQuad: Object.fromEntries(formatRuns.map((f) => [f.name, f.quad.rounds])),
      },
      cpuRatios: {
        storageWriteToRaw: ratio(c),
        storageWriteToRawPlusWriter: ratioBoth(c),
        steadyStateUs: { raw: slope(a, a4), nullSink: slope(b, b4), storageWrite: slope(c, c4) },
      },
      summary: lines,
    },
    null,
    2,
  )}\n`,
);
console.log(`results: ${file}`);
