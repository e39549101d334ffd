/**
 * The CLI as the end-to-end tests run it: the TypeScript sources and the packages they import, bundled by
 * esbuild into one CommonJS file, `dist/test-cli.cjs`, as the image's bundle is (scripts/bundle.mjs, which
 * starts from tsc's output and adds V8's code cache). The transform `bin/kafka-bigquery-drain.mjs` applies
 * through tsx, done once per suite instead of in every process, and one file read instead of about 1,500
 * modules resolved: an idle run takes 0.65 s of CPU instead of 1.65 s (the suite starts about a thousand
 * job and CLI processes). The global setup builds it before any test (about a second); KBD_E2E_CLI=source
 * runs the checkout's bin (tsx) instead. The image's own bundle has its test: test/e2e/job-bundle.test.ts.
 */
import { join } from 'node:path';
import { build } from 'esbuild';
import { root } from './stack.js';

export const testCli = join(root, 'dist', 'test-cli.cjs');
/** The checkout's own entry: the sources through tsx. */
export const sourceCli = join(root, 'bin', 'kafka-bigquery-drain.mjs');

/** Bundles the sources into `dist/test-cli.cjs` (about a second). */
export async function buildTestCli(): Promise<void> {
  await build({
    entryPoints: [join(root, 'functions', 'cli', 'main.ts')],
    outfile: testCli,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    // main.ts runs the CLI when it is the process's main module (its URL is argv[1]'s): the bundle is.
    define: { 'import.meta.url': '__kbdMainUrl' },
    banner: { js: "var __kbdMainUrl = require('node:url').pathToFileURL(process.argv[1] ?? '').href;" },
    logLevel: 'warning',
  });
}

/** What a test's child process runs for `kafka-bigquery-drain`: the built CLI, or the bin if asked. */
export function cliEntry(): string {
  return process.env.KBD_E2E_CLI === 'source' ? sourceCli : testCli;
}
