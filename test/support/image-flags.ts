import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The node flags the job's image starts it with (the Dockerfile's ENTRYPOINT), so that the bench and the
 * production-build test run the job as the image does.
 */
export function imageNodeFlags(root: string): string[] {
  const entrypoint = readFileSync(join(root, 'Dockerfile'), 'utf8').match(/^ENTRYPOINT \[(.*)\]$/m)?.[1];
  if (entrypoint === undefined) throw new Error('the Dockerfile has no ENTRYPOINT [...] line');
  return [...entrypoint.matchAll(/"(--[^"]+)"/g)].map((m) => m[1]!);
}

/** The script the image starts and its default arguments (the Dockerfile's ENTRYPOINT and CMD). */
export function imageEntry(root: string): { script: string; args: string[] } {
  const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
  const entrypoint = dockerfile.match(/^ENTRYPOINT \[(.*)\]$/m)?.[1] ?? '';
  const script = [...entrypoint.matchAll(/"([^"-][^"]*\.m?js)"/g)].map((m) => m[1]!)[0];
  if (script === undefined) throw new Error("the Dockerfile's ENTRYPOINT names no .js or .mjs script");
  const cmd = dockerfile.match(/^CMD \[(.*)\]$/m)?.[1] ?? '';
  return { script: join(root, script), args: [...cmd.matchAll(/"([^"]*)"/g)].map((m) => m[1]!) };
}
