import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

export const root = join(import.meta.dirname, '..', '..');
export { type StackEnv, stackDir, stackEnv } from '../../stack/stack-env.js';

import { stackEnv } from '../../stack/stack-env.js';
/** A name no other test uses (topics, datasets, pipelines, Pub/Sub topics). */
export function uniqueName(prefix: string): string {
  return `${prefix}_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
}

/** Google's Storage Write client (managedwriter) pointed at the local emulator's gRPC port. */
export async function stackWriter() {
  const [{ managedwriter }, grpc] = await Promise.all([
    import('@google-cloud/bigquery-storage'),
    import('@grpc/grpc-js'),
  ]);
  const env = stackEnv() as unknown as Record<string, string>;
  return new managedwriter.WriterClient({
    projectId: env.GOOGLE_CLOUD_PROJECT,
    servicePath: '127.0.0.1',
    port: Number(env.KBD_BIGQUERY_GRPC_PORT),
    sslCreds: grpc.credentials.createInsecure(),
  });
}

/** The official Google clients pointed at the local stack. */
export async function stackClients() {
  const { createGoogleClients } = await import('../../functions/google/clients.js');
  const env = stackEnv();
  return createGoogleClients({
    project: env.GOOGLE_CLOUD_PROJECT,
    emulators: { firestore: env.FIRESTORE_EMULATOR_HOST, pubsub: env.PUBSUB_EMULATOR_HOST },
    bigquery: {
      apiEndpoint: env.BIGQUERY_API_ENDPOINT,
      location: null,
      storageEndpoint: env.BIGQUERY_STORAGE_ENDPOINT ?? null,
    },
  });
}
