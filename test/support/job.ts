/**
 * Runs the real CLI as a child process against the local stack, and reads back what it left in
 * BigQuery, Pub/Sub and Firestore. Every child is tracked: a test that leaves one running fails.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, expect } from 'vitest';
import type { GoogleClients } from '../../functions/google/clients.js';
import { createTopic } from './kafka.js';
import { pullAll } from './pubsub.js';
import { stackClients, stackEnv, uniqueName, useOwnBigQuery } from './stack.js';
import { cliEntry, sourceCli } from './test-cli.js';

export const schemaFields = [
  { name: 'id', type: 'STRING', mode: 'REQUIRED' },
  { name: 'n', type: 'INT64', mode: 'NULLABLE' },
  { name: 'note', type: 'STRING', mode: 'NULLABLE' },
];

/**
 * For an end-to-end test file: clients on the local stack, closed after it; no job may outlive a test.
 * Each file gets a fresh BigQuery emulator of its own (`useOwnBigQuery`): it slows down as data piles up in
 * it (a 30,000-record drain took 5x longer after the suite's earlier files), which would make later files'
 * timing depend on earlier ones; and end-to-end files run side by side.
 */
export async function e2eClients(): Promise<GoogleClients> {
  useOwnBigQuery();
  const clients = await stackClients();
  afterEach(assertNoJobsLeft);
  afterAll(() => clients.close());
  afterAll(removeModules);
  return clients;
}

export interface Pipeline {
  id: string;
  topic: string;
  dataset: string;
  table: string;
  deadLetterTopic: string;
  deadLetterSubscription: string;
  env: Record<string, string>;
}

/** A fresh pipeline: its own Kafka topic, dataset, dead-letter topic (+ subscription) and Firestore path. */
export async function createPipeline(
  clients: GoogleClients,
  partitions: number,
  env: Record<string, string> = {},
): Promise<Pipeline> {
  const id = uniqueName('e2e').replaceAll('_', '-');
  const topic = id;
  const dataset = id.replaceAll('-', '_');
  const deadLetterTopic = `${id}-dlq`;
  const deadLetterSubscription = `${id}-dlq-sub`;
  await createTopic(topic, partitions);
  const [dlq] = await clients.pubsub.createTopic(deadLetterTopic);
  await dlq.createSubscription(deadLetterSubscription);
  const schemaFile = join(tmpdir(), `${id}.schema.json`);
  writeFileSync(schemaFile, JSON.stringify(schemaFields));
  const stack = stackEnv();
  return {
    id,
    topic,
    dataset,
    table: 'events',
    deadLetterTopic,
    deadLetterSubscription,
    env: {
      ...(stack as unknown as Record<string, string>),
      PIPELINE_ID: id,
      KAFKA_TOPICS: topic,
      BQ_DATASET: dataset,
      BQ_TABLE: 'events',
      BQ_SCHEMA_FILE: schemaFile,
      DEAD_LETTER_TOPIC: deadLetterTopic,
      METADATA_SERVER_DETECTION: 'none',
      DRAIN_BUDGET_SECONDS: '60',
      LEASE_TTL_SECONDS: '5',
      BQ_WRITE_MODE: 'insert-all',
      // Load mode paces its jobs by the UTC clock, with one run's share ahead of it: hourly runs with the
      // whole day's loads give a run 62 whatever the hour (the default, 4 a run, could hold back a test's
      // records in the first minutes after midnight). Tests of the pacing set their own.
      LOAD_JOBS_PER_TABLE_PER_DAY: '1500',
      SCHEDULE_PERIOD_SECONDS: '3600',
      ...env,
    },
  };
}

export interface JobProcess {
  child: ChildProcess;
  lines: Record<string, unknown>[];
  stderr: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  summary(): Record<string, unknown> | undefined;
}

const children = new Set<ChildProcess>();

export function startJob(env: Record<string, string>): JobProcess {
  return startCli(['run'], env);
}

/** A CLI command started, its JSON lines collected as they come (a job's, or `dispatch --launch local`'s). */
export function startCli(args: readonly string[], env: Record<string, string>): JobProcess {
  const child = spawn(process.execPath, [cliEntry(), ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  const lines: Record<string, unknown>[] = [];
  const stderr: string[] = [];
  let buffer = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    let at = buffer.indexOf('\n');
    while (at >= 0) {
      const line = buffer.slice(0, at);
      buffer = buffer.slice(at + 1);
      try {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        lines.push({ unparsed: line });
      }
      at = buffer.indexOf('\n');
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
  // Opt-in, for chasing a rare failure: every job's output kept, one file per process.
  const logDir = process.env.KBD_JOB_LOG_DIR;
  if (logDir) {
    mkdirSync(logDir, { recursive: true });
    const file = join(logDir, `job-${Date.now()}-${child.pid}.log`);
    child.stdout!.on('data', (chunk: Buffer) => appendFileSync(file, chunk));
    child.stderr!.on('data', (chunk: Buffer) => appendFileSync(file, chunk));
  }
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('exit', (code, signal) => {
      children.delete(child);
      resolve({ code, signal });
    });
  });
  return { child, lines, stderr, exited, summary: () => lines.findLast((l) => l.event === 'run_summary') };
}

/** Runs the job to its end and returns its exit code and summary; fails with its output if it has none. */
export async function runJob(env: Record<string, string>) {
  const job = startJob(env);
  const { code, signal } = await job.exited;
  const summary = job.summary();
  if (summary === undefined) {
    throw new Error(
      `job ended (code ${code}, signal ${signal}) without a run summary:\n${job.stderr.join('')}\n${JSON.stringify(job.lines.slice(-5))}`,
    );
  }
  return {
    code,
    summary: summary as Record<string, unknown> & {
      stopReason: string;
      partitions: Record<string, unknown>[];
    },
    lines: job.lines,
  };
}

/**
 * A run refused at its connection to Kafka (TLS, SASL): exit 1 at once with the cause named (no retries
 * exceeded, no timeout), the summary the last line, and nothing moved: no checkpoint, no row. Returns how
 * long the run took and its error.
 */
export async function expectRefusedAtConnect(
  clients: GoogleClients,
  pipeline: Pipeline,
  cause: RegExp,
): Promise<{ tookMs: number; error: string }> {
  const started = Date.now();
  const run = await runJob(pipeline.env);
  const tookMs = Date.now() - started;
  expect(run.code, errorsOf(run.lines)).toBe(1);
  expect(run.summary.stopReason).toBe('error');
  expect(String(run.summary.error)).toMatch(cause);
  expect(String(run.summary.error)).not.toMatch(/retries exceeded|timed? ?out/i);
  // The summary is the last line, whole, even on the failure path.
  expect(run.lines.at(-1)).toBe(run.summary);
  expect((await checkpointsOf(clients, pipeline)).size).toBe(0);
  // The run may stop before it made the table (the TLS check comes first): no table, no rows.
  const rows = await tableOffsets(clients, pipeline).catch((error: unknown) => {
    if (/Table not found/.test(String(error))) return new Map();
    throw error;
  });
  expect(rows.size).toBe(0);
  return { tookMs, error: String(run.summary.error) };
}

/** A run's warning and error lines, for an assertion's message when its exit code is not the expected one. */
export function errorsOf(lines: readonly Record<string, unknown>[]): string {
  const grave = lines.filter((l) => ['WARNING', 'ERROR', 'CRITICAL'].includes(String(l.severity)));
  return JSON.stringify(grave.slice(-20), null, 1);
}

/** For afterEach: fails (and cleans up) if a test left a job running. */
export function assertNoJobsLeft(): void {
  const left = [...children];
  for (const child of left) child.kill('SIGKILL');
  children.clear();
  if (left.length > 0) throw new Error(`${left.length} job process(es) were left running`);
}

/** Every `_kafka_offset` in the target table, per partition (duplicates kept). */
export async function tableOffsets(
  clients: GoogleClients,
  pipeline: Pipeline,
): Promise<Map<number, number[]>> {
  const [rows] = await clients.bigquery.query({
    query: `SELECT _kafka_partition AS p, _kafka_offset AS o FROM \`${pipeline.dataset}.${pipeline.table}\``,
  });
  return groupOffsets(rows.map((r: { p: number; o: number }) => [r.p, r.o]));
}

/** Every dead letter on the pipeline's subscription (pulled and acknowledged), per partition. */
export async function deadLetterOffsets(clients: GoogleClients, pipeline: Pipeline) {
  const messages = await pullAll(clients, pipeline.deadLetterSubscription);
  return {
    messages,
    offsets: groupOffsets(
      messages.map((m) => [Number(m.attributes.source_partition), Number(m.attributes.source_offset)]),
    ),
  };
}

function groupOffsets(pairs: [number, number][]): Map<number, number[]> {
  const byPartition = new Map<number, number[]>();
  for (const [p, o] of pairs) byPartition.set(p, [...(byPartition.get(p) ?? []), o]);
  for (const offsets of byPartition.values()) offsets.sort((a, b) => a - b);
  return byPartition;
}

export async function checkpointsOf(
  clients: GoogleClients,
  pipeline: Pipeline,
): Promise<Map<number, number | null>> {
  const docs = await clients.firestore.collection(`pipelines/${pipeline.id}/partitions`).get();
  return new Map(
    docs.docs.map((d) => [d.get('partition') as number, (d.get('nextOffset') as number | null) ?? null]),
  );
}

/**
 * The continuity ledger of one partition, in offset order: its commits since the last roll-up (the
 * roll-up of older ones, `ledger/rollup`, is left out: it is no commit of any one run; `verify` reads it).
 */
export async function ledgerOf(clients: GoogleClients, pipeline: Pipeline, partition: number) {
  const docs = await clients.firestore
    .collection(`pipelines/${pipeline.id}/partitions/${pipeline.topic}~${partition}/ledger`)
    .orderBy('from')
    .get();
  return docs.docs
    .filter((d) => d.id !== 'rollup')
    .map((d) => ({
      from: d.get('from') as number,
      to: d.get('to') as number,
      epoch: d.get('epoch') as number,
      owner: d.get('owner') as string,
      records: (d.get('records') as number | undefined) ?? 0,
      /** When it was committed, epoch ms. */
      at: (d.get('committedAt') as { toMillis(): number }).toMillis(),
    }));
}

/** Runs a CLI command to its end: exit code, stdout and stderr. */
export async function runCli(
  args: string[],
  env: Record<string, string>,
  entry: 'built' | 'source' = 'built',
) {
  return collected(process.execPath, [entry === 'source' ? sourceCli : cliEntry(), ...args], env);
}

/**
 * Runs the CLI on a pseudo-terminal `columns` wide (util-linux `script`, `stty cols`), as an operator
 * sees it; returns its lines without the terminal's carriage returns.
 */
export async function runCliInTerminal(args: string[], env: Record<string, string>, columns: number) {
  const quote = (text: string) => `'${text.replaceAll("'", "'\\''")}'`;
  const command = [process.execPath, cliEntry(), ...args].map(quote).join(' ');
  const { code, stdout } = await collected(
    'script',
    ['-qec', `stty cols ${columns} rows 50; exec ${command}`, '/dev/null'],
    env,
  );
  return {
    code,
    lines: stdout
      .replaceAll('\r', '')
      .split('\n')
      .filter((line) => line !== ''),
  };
}

/** A child process run to its end, its output collected; it may not outlive its test. */
async function collected(file: string, args: string[], env: Record<string, string>) {
  const child = spawn(file, args, {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve) =>
    child.on('exit', (exitCode) => {
      children.delete(child);
      resolve(exitCode);
    }),
  );
  return { code, stdout, stderr };
}

/** Runs `kafka-bigquery-drain verify --json` and returns its exit code and verdicts. */
export async function runVerify(env: Record<string, string>) {
  const { code, stdout, stderr } = await runCli(['verify', '--json'], env);
  if (stdout.trim() === '') throw new Error(`verify printed nothing (exit ${code}): ${stderr}`);
  return { code, verdicts: JSON.parse(stdout) as Record<string, unknown>[] };
}

/** True once no partition of the pipeline is under an unexpired lease. */
export async function leasesFree(clients: GoogleClients, pipeline: Pipeline): Promise<boolean> {
  const docs = await clients.firestore.collection(`pipelines/${pipeline.id}/partitions`).get();
  return docs.docs.every(
    (d) => d.get('leaseOwner') === null || (d.get('leaseExpiresAt')?.toMillis() ?? 0) <= Date.now(),
  );
}

/** Waits until `condition` holds, polling; never a fixed sleep standing in for a condition. */
export async function waitFor<T>(
  what: string,
  condition: () => Promise<T | undefined | false>,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** This test file's folder of user modules (moduleFile), removed after it (its jobs have ended) or at exit. */
let modulesDir: string | undefined;

function removeModules(): void {
  if (modulesDir !== undefined) rmSync(modulesDir, { recursive: true, force: true });
  modulesDir = undefined;
}

/** A user module (rules, transform) written to a file of its own, as an operator's RULES_MODULE would be. */
export function moduleFile(body: string): string {
  if (modulesDir === undefined) {
    modulesDir = mkdtempSync(join(tmpdir(), 'kbdtest-modules-'));
    process.once('exit', removeModules);
  }
  const file = join(modulesDir, `${uniqueName('module')}.mjs`);
  writeFileSync(file, body);
  return file;
}
