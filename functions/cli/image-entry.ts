/**
 * The image's entry point (`dist/job.mjs`, the Dockerfile's ENTRYPOINT). The CLI and every package it
 * imports are one CommonJS file (`dist/job-bundle.cjs`, scripts/bundle.mjs); this compiles it with the V8
 * code cache made from it when the image was built (`dist/job-bundle.cache`), so that each run reads the
 * bundle's functions compiled instead of compiling them again: about a quarter of an idle run's CPU
 * (docs/capacity.md). V8 refuses a cache made by another Node or under other flags than the ENTRYPOINT's:
 * the run is then the same, compiled as it goes, and a `code_cache_refused` line on stderr says so.
 *
 * `--make-code-cache` (scripts/bundle.mjs, with the ENTRYPOINT's flags): evaluate the bundle, print the
 * CLI's usage, and write the cache at exit. Nothing else here: this file imports no module of the product,
 * and runs on import (it is only ever the process's main module).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Script } from 'node:vm';

const here = dirname(fileURLToPath(import.meta.url));
const bundle = join(here, 'job-bundle.cjs');
const cacheFile = join(here, 'job-bundle.cache');

const makeCache = process.argv[2] === '--make-code-cache';
if (makeCache) process.argv.splice(2, 1, '--help');

let cachedData: Buffer | undefined;
if (!makeCache) {
  try {
    cachedData = readFileSync(cacheFile);
  } catch {
    // No cache (a bundle made without one): compiled as it runs.
  }
}
// The bundle is a function of CommonJS's arguments (scripts/bundle.mjs wraps it).
const script = new Script(readFileSync(bundle, 'utf8'), {
  filename: bundle,
  ...(cachedData === undefined ? {} : { cachedData }),
});
const refused = cachedData !== undefined && script.cachedDataRejected === true;
cachedData = undefined; // V8 has read it
if (refused) {
  process.stderr.write(
    `${JSON.stringify({
      severity: 'WARNING',
      message: `V8 refused the code cache ${cacheFile} (made by another Node, or under other flags than the image's ENTRYPOINT): the bundle is compiled as it runs`,
      event: 'code_cache_refused',
    })}\n`,
  );
}
if (makeCache) process.once('exit', () => writeFileSync(cacheFile, script.createCachedData()));

// Node 20's V8 drops from cached code what import() needs: user modules (transforms, rules) are imported
// through this module's own (functions/records/user-module.ts takes it under this symbol).
(globalThis as Record<symbol, unknown>)[Symbol.for('kafka-bigquery-drain.import')] = (url: string) =>
  import(url);

const module = { exports: {} };
(script.runInThisContext() as (...args: unknown[]) => void)(
  module.exports,
  createRequire(bundle),
  module,
  bundle,
  here,
);
