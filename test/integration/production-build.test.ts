/**
 * What the Dockerfile runs, as far as this machine allows (no Docker engine here): the production build
 * from the sources, an entry point that imports no development dependency, and the job starting from
 * the compiled code.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { imageEntry, imageNodeFlags } from '../support/image-flags.js';
import { createPipeline } from '../support/job.js';
import { produce } from '../support/kafka.js';
import { root, stackClients } from '../support/stack.js';

const clients = await stackClients();
afterAll(() => clients.close());
const dist = join(root, 'dist');
// What the image starts: its ENTRYPOINT's script with its CMD (`run`).
const entry = imageEntry(root);
const main = [entry.script, ...entry.args];

beforeAll(() => {
  execFileSync('npm', ['run', 'build'], { cwd: root, stdio: 'pipe' });
  // The image runs the job bundled (dist/job.mjs).
  execFileSync('npm', ['run', 'bundle'], { cwd: root, stdio: 'pipe' });
}, 120_000);

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)],
  );
}

test('the production build imports no development dependency', () => {
  const { devDependencies } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    devDependencies: Record<string, string>;
  };
  const compiled = files(join(dist, 'functions')).filter((f) => f.endsWith('.js'));
  expect(compiled.length).toBeGreaterThan(10);
  for (const file of compiled) {
    const text = readFileSync(file, 'utf8');
    for (const dev of Object.keys(devDependencies))
      expect(text, `${file} imports ${dev}`).not.toMatch(new RegExp(`from ['"]${dev}['"/]`));
  }
});

test('the image starts the compiled CLI, bundled, with `run`', () => {
  expect(entry.script).toBe(join(dist, 'job.mjs'));
  expect(entry.args).toEqual(['run']);
});

test('the compiled job refuses a bad configuration with exit 2, naming the variable', () => {
  const run = spawnSync(process.execPath, main, { env: { PATH: process.env.PATH }, encoding: 'utf8' });
  expect(run.status).toBe(2);
  const lines = run.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  expect(lines.at(-2)).toMatchObject({ severity: 'ERROR', event: 'config_error', variable: 'PIPELINE_ID' });
  expect(lines.at(-1)).toMatchObject({ event: 'run_summary', stopReason: 'error', variable: 'PIPELINE_ID' });
});

test("the compiled job drains, started with the image's node flags", async () => {
  const flags = imageNodeFlags(root);
  expect(flags).toContain('--max-old-space-size=192');
  const pipeline = await createPipeline(clients, 1);
  await produce(pipeline.topic, [
    { partition: 0, value: '{"id":"a"}' },
    { partition: 0, value: 'not json' },
  ]);
  const run = spawnSync(process.execPath, [...flags, ...main], {
    env: { PATH: process.env.PATH, ...pipeline.env },
    encoding: 'utf8',
  });
  expect(run.status).toBe(0);
  const summary = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
  expect(summary).toMatchObject({
    event: 'run_summary',
    stopReason: 'caught_up',
    rowsWritten: 1,
    deadLettered: 1,
  });
});
