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
