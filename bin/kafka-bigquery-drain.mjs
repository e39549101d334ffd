#!/usr/bin/env node
// Runs the compiled CLI (dist/, as in the container image) or, in a checkout, the TypeScript sources.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const source = join(root, 'functions', 'cli', 'main.ts');
const compiled = join(root, 'dist', 'functions', 'cli', 'main.js');

let entry = compiled;
if (existsSync(source) && existsSync(join(root, 'node_modules', 'tsx'))) {
  const { register } = await import('tsx/esm/api');
  register();
  entry = source;
}
const { cli, exitWhenWritten } = await import(pathToFileURL(entry).href);
exitWhenWritten(await cli(process.argv.slice(2), process.env));
