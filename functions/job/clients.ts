import { BigQuery } from '@google-cloud/bigquery';
import { Firestore } from '@google-cloud/firestore';
import { PubSub } from '@google-cloud/pubsub';
import type { DrainConfig } from '../drain/config.js';

export interface GoogleClients {
  readonly firestore: Firestore;
  readonly pubsub: PubSub;
  readonly bigquery: BigQuery;
  close(): Promise<void>;
}

/** The official clients, pointed at the emulators when the config names them, else at Google Cloud. */
export function createGoogleClients(
  config: Pick<DrainConfig, 'project' | 'emulators' | 'bigquery'>,
): GoogleClients {
  const firestoreHost = config.emulators.firestore;
  const firestore = new Firestore({
    projectId: config.project,
    ignoreUndefinedProperties: true,
    ...(firestoreHost === null ? {} : emulatorEndpoint(firestoreHost)),
  });
  const pubsub = new PubSub({
    projectId: config.project,
    ...(config.emulators.pubsub === null ? {} : { apiEndpoint: config.emulators.pubsub, emulatorMode: true }),
  });
  const bigquery = new BigQuery({
    projectId: config.project,
    ...(config.bigquery.location === null ? {} : { location: config.bigquery.location }),
    ...(config.bigquery.apiEndpoint === null ? {} : { apiEndpoint: config.bigquery.apiEndpoint }),
  });
  return {
    firestore,
    pubsub,
    bigquery,
    async close() {
      await Promise.allSettled([firestore.terminate(), pubsub.close()]);
    },
  };
}

function emulatorEndpoint(hostPort: string): { host: string; port: number; ssl: false } {
  const at = hostPort.lastIndexOf(':');
  return { host: hostPort.slice(0, at), port: Number(hostPort.slice(at + 1)), ssl: false };
}
