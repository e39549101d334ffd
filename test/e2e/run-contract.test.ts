/**
 * The outward contract of a run at every setting (../shared/DESIGN.md, "A run, seen from outside"): the
 * run summary is the last stdout line at every LOG_LEVEL and on every exit path, whole through a pipe;
 * every command answers --help; a default never turns a valid setting into an error.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import {
  checkpointsOf,
  createPipeline,
  e2eClients,
  runCli,
  runJob,
  startJob,
  waitFor,
} from '../support/job.js';
import { produce } from '../support/kafka.js';
import { root } from '../support/stack.js';

const clients = await e2eClients();

describe('the run summary', () => {
  test.each([
    'debug',
    'info',
    'warn',
    'warning',
    'error',
  ])('LOG_LEVEL=%s: the last stdout line is the whole run summary, and nothing below the level is written', async (level) => {
    const pipeline = await createPipeline(clients, 1, { LOG_LEVEL: level });
    await produce(pipeline.topic, [
      { partition: 0, value: JSON.stringify({ id: 'a', n: 1 }) },
      { partition: 0, value: 'not json' },
    ]);
    const run = await runJob(pipeline.env);
    expect(run.code).toBe(0);
    const last = run.lines.at(-1)!;
    expect(last).toMatchObject({
      event: 'run_summary',
      stopReason: 'caught_up',
      rowsWritten: 1,
      deadLettered: 1,
    });
    const rank: Record<string, number> = { DEBUG: 0, INFO: 1, NOTICE: 1, WARNING: 2, ERROR: 3 };
    const min = { debug: 0, info: 1, warn: 2, warning: 2, error: 3 }[level]!;
    const below = run.lines.slice(0, -1).filter((l) => rank[String(l.severity)]! < min);
    expect(below).toEqual([]);
    if (level === 'debug') expect(run.lines.some((l) => l.severity === 'DEBUG')).toBe(true);
  });

  test('a bad setting (exit 2): the error names the variable, then the run summary is the last line', async () => {
    const pipeline = await createPipeline(clients, 1, { DRAIN_BUDGET_SECONDS: 'soon', LOG_LEVEL: 'error' });
    const run = await runJob(pipeline.env);
    expect(run.code).toBe(2);
    expect(run.lines.at(-2)).toMatchObject({ event: 'config_error', variable: 'DRAIN_BUDGET_SECONDS' });
    expect(run.lines.at(-1)).toMatchObject({
      event: 'run_summary',
      stopReason: 'error',
      pipeline: pipeline.id,
      variable: 'DRAIN_BUDGET_SECONDS',
    });
  });

  test('DRAIN_BUDGET_SECONDS=30 alone is a valid setting: the lease TTL default follows it down', async () => {
    const pipeline = await createPipeline(clients, 1, { DRAIN_BUDGET_SECONDS: '30', LEASE_TTL_SECONDS: '' });
    await produce(pipeline.topic, [{ partition: 0, value: JSON.stringify({ id: 'a' }) }]);
    const run = await runJob(pipeline.env);
    expect(run.code).toBe(0);
    expect(run.summary).toMatchObject({ stopReason: 'caught_up', rowsWritten: 1 });
  });

  test('a line over 64 KB reaches a slow pipe whole: the process exits only once stdout is written', async () => {
    // What a container runtime does: read stdout through a pipe, at its own pace. The reader starts only
    // once the line was handed to stdout (the child says so on stderr), however long the child took to
    // start: a fixed pause let a child slower to start than the pause write to a pipe already being read.
    const script = (exit: string) =>
      `import { exitWhenWritten } from ${JSON.stringify(join(root, 'functions/job/main.ts'))};
       process.stdout.write(JSON.stringify({ event: 'run_summary', padding: 'x'.repeat(300000) }) + '\\n');
       process.stderr.write('handed over\\n');
       ${exit};`;
    const readSlowly = (code: string) =>
      new Promise<string>((resolve) => {
        const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
          cwd: root,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let out = '';
        child.stdout.pause();
        child.stderr.on('data', (chunk: Buffer) => {
          process.stderr.write(chunk);
          if (chunk.toString().includes('handed over')) setTimeout(() => child.stdout.resume(), 500);
        });
        child.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString();
        });
        child.stdout.on('end', () => resolve(out));
      });
    // Without waiting, the line is cut where the pipe's buffer ended: the failure this guards against.
    const cut = await readSlowly(script('process.exit(1)'));
    expect(cut.length).toBeLessThan(300_000);
    const whole = await readSlowly(script('exitWhenWritten(1)'));
    expect(JSON.parse(whole.trim())).toMatchObject({ event: 'run_summary' });
    expect(whole.length).toBe(300_000 + '{"event":"run_summary","padding":""}\n'.length);
  });

  test('SIGTERM at LOG_LEVEL=warn: the run settles and the summary is still the last line', async () => {
    const pipeline = await createPipeline(clients, 1, { LOG_LEVEL: 'warn', BATCH_MAX_RECORDS: '100' });
    await produce(
      pipeline.topic,
      Array.from({ length: 5_000 }, (_, i) => ({ partition: 0, value: JSON.stringify({ id: `r${i}` }) })),
    );
    const job = startJob(pipeline.env);
    await waitFor(
      'the run to commit',
      async () => ((await checkpointsOf(clients, pipeline)).get(0) ?? 0) > 0,
    );
    job.child.kill('SIGTERM');
    const { code } = await job.exited;
    expect(code).toBe(0);
    expect(job.lines.at(-1)).toMatchObject({ event: 'run_summary', stopReason: 'signal' });
  });
});

describe('--help', () => {
  test.each([
    'run',
    'verify',
    'status',
    'seek',
    'pause',
    'resume',
    'dead-letters',
    'replay-dead-letters',
  ])('%s --help prints its usage and exits 0, without configuration', async (command) => {
    const { code, stdout } = await runCli([command, '--help'], {});
    expect(code).toBe(0);
    expect(stdout).toMatch(new RegExp(`^usage: kafka-bigquery-drain ${command}\\b`));
    expect(stdout).toContain('exit codes');
  });

  test('help <command> and a bare --help print usage and exit 0; no command at all exits 2', async () => {
    expect((await runCli(['help', 'seek'], {})).stdout).toMatch(/^usage: kafka-bigquery-drain seek --topic/);
    const all = await runCli(['--help'], {});
    expect(all.code).toBe(0);
    expect(all.stdout).toContain('replay-dead-letters');
    expect((await runCli([], {})).code).toBe(2);
  });

  test("the checkout's bin (the sources through tsx) is the CLI the other tests run built (test-cli.ts)", async () => {
    const viaBin = await runCli(['status', '--help'], {}, 'source');
    const built = await runCli(['status', '--help'], {});
    expect(viaBin.code).toBe(0);
    expect(viaBin.stdout).toBe(built.stdout);
    const noCommand = await runCli([], {}, 'source');
    expect(noCommand.code).toBe(2);
  });
});
