/**
 * The image runs the job as one bundled file (dist/job-bundle.cjs, started by dist/job.mjs with its V8
 * code cache; `npm run bundle`; the Dockerfile's ENTRYPOINT):
 * every other end-to-end test runs the sources, so this one runs the bundle, with the image's flags, in
 * each write mode: rows written, a dead letter published, a caught-up run after it. And it loads no
 * package from node_modules at run time: one kafkajs (the one kafkajs-patch.ts patches), one gRPC, one of
 * each Google client.
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, expect, test } from 'vitest';
import { imageNodeFlags } from '../support/image-flags.js';
import { createPipeline, deadLetterOffsets, e2eClients, tableOffsets } from '../support/job.js';
import { produce } from '../support/kafka.js';
import { root, uniqueName } from '../support/stack.js';

const clients = await e2eClients();
const bundle = join(root, 'dist', 'job.mjs');

/** Records each package the process requires at run time (not Node's own modules) into KBD_LOADED. */
const hook = join(tmpdir(), `${uniqueName('require-hook')}.cjs`);
writeFileSync(
  hook,
  `const Module = require('node:module');
const { appendFileSync } = require('node:fs');
const load = Module._load;
Module._load = function (request, ...rest) {
  const loaded = load.call(this, request, ...rest);
  if (!Module.isBuiltin(request)) appendFileSync(process.env.KBD_LOADED, request + '\\n');
  return loaded;
};
`,
);

beforeAll(() => {
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: 'inherit', timeout: 300_000 });
  execFileSync('npm', ['run', '--silent', 'bundle'], { cwd: root, stdio: 'inherit', timeout: 300_000 });
}, 600_000);

/** Each bundle run's whole stdout, in order. */
const outputs: string[] = [];

/** The bundle as the image's ENTRYPOINT runs it; its run summary and the packages it required. */
function runBundle(env: Record<string, string>, args = ['run']) {
  const loadedFile = join(tmpdir(), `${uniqueName('loaded')}.txt`);
  writeFileSync(loadedFile, '');
  return new Promise<{
    code: number;
    summary: Record<string, unknown>;
    loaded: string[];
    stderr: string;
  }>((resolve, reject) => {
    execFile(
      process.execPath,
      ['--require', hook, ...imageNodeFlags(root), bundle, ...args],
      {
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env, KBD_LOADED: loadedFile },
        maxBuffer: 16 * 1024 * 1024,
        timeout: 120_000,
      },
      (error, stdout, stderr) => {
        outputs.push(stdout);
        const lines = stdout.trim().split('\n');
        const last = lines.at(-1) ?? '';
        if (args[0] === 'run' && !last.startsWith('{')) {
          reject(new Error(`the bundle ended without a summary: ${error?.message}\n${stderr.slice(-3000)}`));
          return;
        }
        resolve({
          code: error ? Number(error.code ?? 1) : 0,
          summary: (args[0] === 'run' ? JSON.parse(last) : {}) as Record<string, unknown>,
          loaded: readFileSync(loadedFile, 'utf8').split('\n').filter(Boolean),
          stderr,
        });
      },
    );
  });
}

test('the Dockerfile builds the bundle and runs it', () => {
  const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
  // The bundle script reads the ENTRYPOINT's flags from the Dockerfile to make the code cache under them.
  expect(dockerfile).toMatch(/COPY Dockerfile \.\/\nRUN npm run build && npm run bundle/);
  expect(dockerfile).toMatch(/ENTRYPOINT \[.*"dist\/job\.mjs"\]/);
});

test('the bundle is ASCII: V8 holds its source as one byte a character, not two', () => {
  // One character beyond Latin-1 (a ’ in a package's comment) made the 16.8 MB source a 33.6 MB string.
  const source = readFileSync(join(root, 'dist', 'job-bundle.cjs'), 'latin1');
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the range is the point
  expect(source.match(/[^\u0000-\u007f][^\n]{0,60}/g) ?? []).toEqual([]);
});

test.each([
  'storage-write',
  'insert-all',
  'load',
  'merge',
])('%s: the bundled job writes the rows and dead-letters the bad one; a second run is caught up', async (mode) => {
  const pipeline = await createPipeline(clients, 2, {
    BQ_WRITE_MODE: mode,
    ...(mode === 'merge' ? { BQ_PRIMARY_KEY: 'id' } : {}),
  });
  await produce(pipeline.topic, [
    { partition: 0, value: JSON.stringify({ id: 'a', n: 1 }) },
    { partition: 0, value: JSON.stringify({ id: 'b', n: 'two' }) },
    { partition: 1, value: JSON.stringify({ id: 'c', n: 3, note: 'ünï' }) },
    { partition: 1, value: JSON.stringify({ id: 'd' }) },
  ]);
  const first = await runBundle(pipeline.env);
  expect(first.code, JSON.stringify(first.summary)).toBe(0);
  expect(first.summary).toMatchObject({ event: 'run_summary', rowsWritten: 3, deadLettered: 1 });
  expect(await tableOffsets(clients, pipeline)).toEqual(
    new Map([
      [0, [0]],
      [1, [0, 1]],
    ]),
  );
  expect((await deadLetterOffsets(clients, pipeline)).offsets).toEqual(new Map([[0, [1]]]));
  // Everything from inside the bundle: no second copy of a package from node_modules.
  expect(first.loaded.filter((m) => !/^supports-color$/.test(m))).toEqual([]);
  // Compiled from the code cache made with the bundle, under the image's flags.
  expect(first.stderr).not.toContain('code_cache_refused');

  const second = await runBundle(pipeline.env);
  expect(second.code).toBe(0);
  expect(second.summary).toMatchObject({ stopReason: 'caught_up', recordsRead: 0, rowsWritten: 0 });
});

test('the bundle runs the command it is given and no other: `check` checks and drains nothing', async () => {
  // Every module of the bundle has the bundle's URL: a second "am I the main module?" block (the job's
  // own) ran a drain before any command (`gcloud run jobs execute --args=check` drained the topic).
  const pipeline = await createPipeline(clients, 1);
  await produce(pipeline.topic, [{ partition: 0, value: JSON.stringify({ id: 'a', n: 1 }) }]);
  await runBundle(pipeline.env, ['check', '--json']);
  const stdout = outputs.at(-1)!;
  expect(stdout).not.toContain('run_summary');
  expect(JSON.parse(stdout)).toHaveProperty('checks');
  // The record is still there for the run: the check read none.
  const run = await runBundle(pipeline.env);
  expect(run.summary).toMatchObject({ event: 'run_summary', recordsRead: 1, rowsWritten: 1 });
  expect(outputs.at(-1)!.match(/"event":"run_summary"/g)).toHaveLength(1);
});

test('a code cache V8 refuses (made under other flags) is said on stderr; the CLI runs the same', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kbd-code-cache-'));
  for (const file of ['job.mjs', 'job-bundle.cjs']) copyFileSync(join(root, 'dist', file), join(dir, file));
  // Made without the ENTRYPOINT's flags, then run with them.
  execFileSync(process.execPath, [join(dir, 'job.mjs'), '--make-code-cache'], { stdio: 'ignore' });
  expect(existsSync(join(dir, 'job-bundle.cache'))).toBe(true);
  const refused = spawnSync(process.execPath, [...imageNodeFlags(root), join(dir, 'job.mjs'), '--help'], {
    encoding: 'utf8',
  });
  expect(refused.status).toBe(0);
  expect(refused.stdout).toContain('usage: kafka-bigquery-drain');
  expect(refused.stderr).toContain('"event":"code_cache_refused"');
  // The image's own, made by `npm run bundle` under them, is taken.
  const taken = spawnSync(process.execPath, [...imageNodeFlags(root), bundle, '--help'], {
    encoding: 'utf8',
  });
  expect(taken.stdout).toContain('usage: kafka-bigquery-drain');
  expect(taken.stderr).not.toContain('code_cache_refused');
});

test('a transform module is imported by its file URL from inside the bundle', async () => {
  // The bundle runs from V8's code cache, where Node 20 has no import() of its own (image-entry.ts).
  const transform = join(tmpdir(), `${uniqueName('transform')}.mjs`);
  writeFileSync(transform, "export function transform(v) { return { ...v, note: 'seen ' + v.id }; }\n");
  const pipeline = await createPipeline(clients, 1, { TRANSFORM_MODULE: transform });
  await produce(pipeline.topic, [{ partition: 0, value: JSON.stringify({ id: 'a', n: 1 }) }]);
  const run = await runBundle(pipeline.env);
  expect(run.summary, JSON.stringify(run.summary)).toMatchObject({ rowsWritten: 1, deadLettered: 0 });
  const [rows] = await clients.bigquery.query(
    `SELECT id, note FROM \`${pipeline.dataset}.${pipeline.table}\``,
  );
  expect(rows).toEqual([{ id: 'a', note: 'seen a' }]);
});
