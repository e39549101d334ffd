/**
 * The CLI as the end-to-end tests run it: the TypeScript sources compiled by esbuild into one ES module,
 * `dist/test-cli.mjs`, packages left to node_modules. It is the transform `bin/kafka-bigquery-drain.mjs`
 * applies through tsx, done once per suite instead of in every process: a job process then starts with
 * about 0.6 s less CPU (the suite starts a thousand of them). The global setup builds it before any test;
 * KBD_E2E_CLI=source runs the checkout's bin (tsx) instead. The image's own bundle (scripts/bundle.mjs) has
 * its test: test/e2e/job-bundle.test.ts.
 */
import { join } from 'node:path';
import { build } from 'esbuild';
import { root } from './stack.js';

export const testCli = join(root, 'dist', 'test-cli.mjs');
/** The checkout's own entry: the sources through tsx. */
export const sourceCli = join(root, 'bin', 'kafka-bigquery-drain.mjs');

/** Compiles the sources into `dist/test-cli.mjs` (a quarter of a second). */
export async function buildTestCli(): Promise<void> {
  await build({
    // main.ts runs the CLI when it is the process's main module: the bundle is.
    entryPoints: [join(root, 'functions', 'cli', 'main.ts')],
    outfile: testCli,
    bundle: true,
    packages: 'external',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    sourcemap: 'linked',
    logLevel: 'warning',
  });
}

/** What a test's child process runs for `kafka-bigquery-drain`: the built CLI, or the bin if asked. */
export function cliEntry(): string {
  return process.env.KBD_E2E_CLI === 'source' ? sourceCli : testCli;
}
