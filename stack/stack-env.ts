import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Where `stack/stack.sh` keeps its state (KBD_STACK_DIR moves it, e.g. for a second stack). */
export const stackDir = process.env.KBD_STACK_DIR ?? join(import.meta.dirname, '..', '.stack');

export interface StackEnv {
  KAFKA_BROKERS: string;
  FIRESTORE_EMULATOR_HOST: string;
  PUBSUB_EMULATOR_HOST: string;
  BIGQUERY_API_ENDPOINT: string;
  BIGQUERY_STORAGE_ENDPOINT: string;
  GOOGLE_CLOUD_PROJECT: string;
}

/** Where the local stack runs, as `stack/stack.sh up` wrote it to `.stack/env`. */
export function stackEnv(): StackEnv {
  const env: Record<string, string> = {};
  for (const line of readFileSync(join(stackDir, 'env'), 'utf8').split('\n')) {
    const at = line.indexOf('=');
    if (at > 0) env[line.slice(0, at)] = line.slice(at + 1);
  }
  return env as unknown as StackEnv;
}
