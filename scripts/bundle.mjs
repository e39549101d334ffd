// The job's image runs one file: the compiled CLI (dist/functions/cli/main.js) and the packages it
// imports, bundled into dist/job-bundle.cjs, started by dist/job.mjs (functions/cli/image-entry.ts) with
// the V8 code cache made here (dist/job-bundle.cache). Node then reads one file instead of resolving,
// reading and wrapping about 1,500 modules, and the functions V8 compiled here instead of compiling them
// again (docs/capacity.md, "What an idle run costs"). `npm run build` first.
//
// The cache is made under the node flags of the Dockerfile's ENTRYPOINT: V8 refuses a cache made under
// other flags (the image build copies the Dockerfile for this).
//
// `--sources --out DIR --plain-node` makes the same from the TypeScript sources (no `npm run build`: esbuild
// reads them), into DIR, with the cache made for a plain `node DIR/job.mjs`: the CLI the tests start
// (test/support/test-cli.ts).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';

const { values: options } = parseArgs({
  options: {
    sources: { type: 'boolean', default: false },
    out: { type: 'string', default: 'dist' },
    'plain-node': { type: 'boolean', default: false },
  },
});
const out = options.out;
const entry = (name) => (options.sources ? `functions/cli/${name}.ts` : `dist/functions/cli/${name}.js`);

await build({
  entryPoints: [entry('main')],
  outfile: join(out, 'job-bundle.cjs'),
  bundle: true,
  platform: 'node',
  // CommonJS: Node 20 has a code cache for scripts (vm.Script), not for ES modules.
  format: 'cjs',
  target: 'node20',
  // The bundle is only ever the process's main module (the CLI's "am I main?" test holds).
  define: { 'import.meta.url': '__kbdMainUrl' },
  // Wrapped as Node wraps a CommonJS module, strict as the ES modules it is made of: image-entry.ts
  // compiles the file as it is (no second 12 MB string for a wrapper) and calls the function.
  banner: {
    js: [
      '(function (exports, require, module, __filename, __dirname) {"use strict";',
      "var __kbdMainUrl = require('node:url').pathToFileURL(process.argv[1] ?? '').href;",
    ].join(' '),
  },
  footer: { js: '})' },
  legalComments: 'external',
  logLevel: 'warning',
});
// One character beyond Latin-1 makes V8 hold the whole source as a two-byte string: esbuild escapes
// them in code (charset ascii) but keeps them in the comments it keeps (14 of them: a ’ in a package's
// comment made the 16.8 MB source a 33.6 MB string in every run's heap). In a comment an escape is text.
const bundled = join(out, 'job-bundle.cjs');
const source = readFileSync(bundled, 'utf8');
// biome-ignore lint/suspicious/noControlCharactersInRegex: the range is the point
const wide = /[^\u0000-\u007f]/g;
if (wide.test(source))
  writeFileSync(
    bundled,
    source.replace(wide, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`),
  );
await build({
  entryPoints: [entry('image-entry')],
  outfile: join(out, 'job.mjs'),
  platform: 'node',
  format: 'esm',
  target: 'node20',
  logLevel: 'warning',
});

function entrypointFlags() {
  const entrypoint = readFileSync('Dockerfile', 'utf8').match(/^ENTRYPOINT \[(.*)\]$/m)?.[1];
  if (entrypoint === undefined) throw new Error('the Dockerfile has no ENTRYPOINT [...] line');
  return [...entrypoint.matchAll(/"(--[^"]+)"/g)].map((m) => m[1]);
}
const flags = options['plain-node'] ? [] : entrypointFlags();
const cache = join(out, 'job-bundle.cache');
rmSync(cache, { force: true });
const made = spawnSync(process.execPath, [...flags, join(out, 'job.mjs'), '--make-code-cache'], {
  stdio: ['ignore', 'ignore', 'inherit'],
});
if (made.status !== 0 || !existsSync(cache)) throw new Error(`making the code cache failed (exit ${made.status})`);
