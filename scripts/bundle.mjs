// The job's image runs one file: the compiled CLI (dist/functions/cli/main.js) and the packages it
// imports, bundled into dist/job.mjs. Node then reads and compiles one file instead of resolving,
// reading and wrapping about 1,500 modules: an idle run takes about 0.9 s of CPU instead of 1.4
// (docs/capacity.md, "What an idle run costs"). `npm run build` first.
import { build } from 'esbuild';

// Bundled CommonJS packages still call require, and read files beside themselves by __dirname (gRPC's
// channelz protos, unused by the drain): both given, as an ES module has neither.
const banner = [
  "import { createRequire as __kbdRequire } from 'node:module';",
  "import { fileURLToPath as __kbdPath } from 'node:url';",
  "import { dirname as __kbdDirname } from 'node:path';",
  'const require = __kbdRequire(import.meta.url);',
  'const __filename = __kbdPath(import.meta.url);',
  'const __dirname = __kbdDirname(__filename);',
].join('\n');

await build({
  entryPoints: ['dist/functions/cli/main.js'],
  outfile: 'dist/job.mjs',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  banner: { js: banner },
  legalComments: 'external',
  logLevel: 'warning',
});
