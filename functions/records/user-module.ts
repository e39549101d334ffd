/**
 * A user's module (TRANSFORM_MODULE, RULES_MODULE) by its path, relative to the working directory.
 *
 * In the image the bundle runs from V8's code cache (functions/cli/image-entry.ts), and Node 20's V8 drops
 * from cached code what its own `import()` needs ("A dynamic import callback was not specified"; fixed in
 * later V8s): the image's entry, which is not cached, lends its `import()` under this symbol.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

export const lentImport = Symbol.for('kafka-bigquery-drain.import');

export async function importUserModule(specifier: string): Promise<Record<string, unknown>> {
  const url = pathToFileURL(resolve(specifier)).href;
  const lent = (globalThis as { [lentImport]?: (url: string) => Promise<unknown> })[lentImport];
  return (await (lent === undefined ? import(url) : lent(url))) as Record<string, unknown>;
}
