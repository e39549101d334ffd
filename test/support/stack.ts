import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export const root = join(import.meta.dirname, '..', '..');
/** Where `stack/stack.sh` keeps its state (KBD_STACK_DIR moves it, e.g. for a second stack). */
export const stackDir = process.env.KBD_STACK_DIR ?? join(root, '.stack');

export interface StackEnv {
  KAFKA_BROKERS: string;
  FIRESTORE_EMULATOR_HOST: string;
  PUBSUB_EMULATOR_HOST: string;
  BIGQUERY_API_ENDPOINT: string;
  GOOGLE_CLOUD_PROJECT: string;
}

/** Where the local stack runs, as `stack/stack.sh up` wrote it. */
export function stackEnv(): StackEnv {
  const text = readFileSync(join(stackDir, 'env'), 'utf8');
  const env: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const at = line.indexOf('=');
    if (at > 0) env[line.slice(0, at)] = line.slice(at + 1);
  }
  return env as unknown as StackEnv;
}

/** A name no other test uses (topics, datasets, pipelines, Pub/Sub topics). */
export function uniqueName(prefix: string): string {
  return `${prefix}_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
}

/** The official Google clients pointed at the local stack. */
export async function stackClients() {
  const { createGoogleClients } = await import('../../functions/job/clients.js');
  const env = stackEnv();
  return createGoogleClients({
    project: env.GOOGLE_CLOUD_PROJECT,
    emulators: { firestore: env.FIRESTORE_EMULATOR_HOST, pubsub: env.PUBSUB_EMULATOR_HOST },
    bigquery: {
      apiEndpoint: env.BIGQUERY_API_ENDPOINT,
      location: null,
      dataset: 'unused',
      table: 'unused',
      schemaFile: 'unused',
      writeMode: 'insert-all',
    },
  });
}
