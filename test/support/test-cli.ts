/**
 * The CLI as the end-to-end tests run it: the image's bundle, made from the TypeScript sources
 * (`node scripts/bundle.mjs --sources --out dist/test-cli --plain-node`): the sources and their packages in
 * one CommonJS file, started by `dist/test-cli/job.mjs` (functions/cli/image-entry.ts) with its V8 code
 * cache, made for a plain `node`. The transform `bin/kafka-bigquery-drain.mjs` applies through tsx is done
 * once per suite instead of in every process, one file is read instead of about 1,500 modules resolved, and
 * the compiled code comes from the cache: an idle storage-write run takes about 0.5 s of CPU instead of 1.65 s
 * (the suite starts about a thousand job and CLI processes). The global setup builds it before any test
 * (a few seconds); KBD_E2E_CLI=source runs the checkout's bin (tsx) instead. The image's own bundle, built
 * from tsc's output under the Dockerfile's flags, has its test: test/e2e/job-bundle.test.ts.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { root } from './stack.js';

export const testCli = join(root, 'dist', 'test-cli', 'job.mjs');
/** The checkout's own entry: the sources through tsx. */
export const sourceCli = join(root, 'bin', 'kafka-bigquery-drain.mjs');

/** Bundles the sources into `dist/test-cli/` with the code cache. */
export async function buildTestCli(): Promise<void> {
  await promisify(execFile)(
    process.execPath,
    [join(root, 'scripts', 'bundle.mjs'), '--sources', '--out', join('dist', 'test-cli'), '--plain-node'],
    { cwd: root, timeout: 300_000 },
  );
}

/**
 * What a test's child process runs for `kafka-bigquery-drain`: the built CLI, the bin if asked (`source`),
 * or a script named by its path (scripts/release-compat.ts: an earlier release's bin).
 */
export function cliEntry(): string {
  const chosen = process.env.KBD_E2E_CLI;
  if (chosen === 'source') return sourceCli;
  return chosen?.endsWith('.mjs') ? chosen : testCli;
}
