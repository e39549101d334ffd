/**
 * Runs one variant of the drain benchmark (variant.ts) in a process of its own, as the image runs the job:
 * compiled JavaScript without source maps (tsconfig.bench.json, the build's settings), the image's V8 flags
 * (its ENTRYPOINT), not TypeScript through tsx, whose loader thread, transpiling and source-mapped stack
 * traces (each Error a client makes) are no part of production's CPU. Shared by drain-bench.ts and
 * avro-producers.ts.
 */
import { execFile, execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { imageNodeFlags } from '../test/support/image-flags.js';

const root = join(import.meta.dirname, '..');
const compiledVariant = join(root, 'bench', 'compiled', 'bench', 'variant.js');

/** BENCH_NODE_FLAGS: node flags after the image's (`--cpu-prof`, or one to weigh before the Dockerfile). */
function extraFlags(): string[] {
  return (process.env.BENCH_NODE_FLAGS ?? '').split(/\s+/).filter((f) => f !== '');
}

/** Compiles the variants (once a bench run). */
export function compileVariants(): void {
  execFileSync(
    process.execPath,
    [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'tsconfig.bench.json')],
    { stdio: 'inherit' },
  );
}

export interface Result {
  variant: string;
  records: number;
  startedAt: number;
  firstFetchAt: number | null;
  lastDoneAt: number | null;
  endedAt: number;
  peakRssMb: number;
  firestoreReads: number;
  firestoreWrites: number;
  commits?: number;
  stopReason?: string;
  partitions?: number;
  summaryBytes?: number;
  cpuUs: number;
  cpuAtFirstFetchUs?: number;
  /** The variant process's exit code (the tasks of an execution). */
  exitCode?: number;
  sharedPartitions?: number;
}

export interface VariantSetting {
  readonly stack: Record<string, string>;
  /** The bench run's name: its dead-letter topic is `{run}-dlq`. */
  readonly run: string;
  readonly schemaFile: string;
  /** BENCH_SHAPE. */
  readonly shape: string;
  /** Records per batch, when not the product's default. */
  readonly batch?: string | undefined;
}

/** A variant (`raw`, `writer`, `null`, `bigquery`) on `topics`' `count` records as pipeline `pipeline`. */
export function variantRunner(setting: VariantSetting) {
  const nodeFlags = imageNodeFlags(root);
  const { stack, run, schemaFile, shape, batch } = setting;
  return async function variant(
    name: string,
    topics: string,
    count: number,
    pipeline: string,
    extra: Record<string, string> = {},
  ): Promise<Result> {
    const env = {
      ...process.env,
      ...stack,
      METADATA_SERVER_DETECTION: 'none',
      PIPELINE_ID: pipeline,
      KAFKA_TOPICS: topics,
      BQ_DATASET: pipeline.replaceAll('-', '_'),
      BQ_TABLE: 'events',
      BQ_SCHEMA_FILE: schemaFile,
      DEAD_LETTER_TOPIC: `${run}-dlq`,
      DRAIN_BUDGET_SECONDS: '600',
      ...(batch === undefined ? {} : { BATCH_MAX_RECORDS: batch }),
      BENCH_SHAPE: shape,
      ...extra,
    };
    const { stdout, stderr, code } = await new Promise<{ stdout: string; stderr: string; code: number }>(
      (resolve) =>
        execFile(
          process.execPath,
          [...nodeFlags, ...extraFlags(), compiledVariant, name, topics, String(count)],
          { env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
          (error, out, err) =>
            resolve({ stdout: out, stderr: err, code: error ? Number(error.code ?? 1) : 0 }),
        ),
    );
    // BENCH_STDOUT_DIR: each variant's whole output kept there (what BENCH_NODE_FLAGS=--trace-gc prints).
    if (process.env.BENCH_STDOUT_DIR)
      writeFileSync(join(process.env.BENCH_STDOUT_DIR, `${pipeline}.out`), stdout);
    const last = stdout.trim().split('\n').at(-1);
    if (last === undefined || !last.startsWith('{')) {
      throw new Error(
        `variant ${name} (${pipeline}) exited ${code} without a result: ${stderr.slice(-2000)}`,
      );
    }
    return { ...(JSON.parse(last) as Result), exitCode: code };
  };
}

/** A run's CPU from its first fetch (start-up left out), µs a record. */
export function cpuPerRecord(r: Result): number {
  return r.records === 0 ? 0 : (r.cpuUs - (r.cpuAtFirstFetchUs ?? 0)) / r.records;
}

/** The middle one of some numbers (the upper middle of an even count). */
export function median(xs: readonly number[]): number {
  return [...xs].sort((x, y) => x - y)[xs.length >> 1]!;
}
