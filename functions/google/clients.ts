import { BigQuery } from '@google-cloud/bigquery';
import { managedwriter } from '@google-cloud/bigquery-storage';
import { Firestore } from '@google-cloud/firestore';
import { PubSub } from '@google-cloud/pubsub';
import * as grpc from '@grpc/grpc-js';
import type { DrainConfig } from '../config/config.js';
import { recordBigQueryCalls } from './call-recorder.js';
import { patchFirestoreTermination } from './firestore-patch.js';

export interface GoogleClients {
  readonly firestore: Firestore;
  readonly pubsub: PubSub;
  readonly bigquery: BigQuery;
  /** The Storage Write API client, made at first use (storage-write mode only). */
  bigqueryWriter(): managedwriter.WriterClient;
  close(): Promise<void>;
}

/**
 * The official clients, pointed at the emulators when the config names them, else at Google Cloud.
 * `onBigQueryError` hears every error answer BigQuery's client is about to retry by itself (a 503): a run
 * uses it to tell a failing BigQuery (it answers) from a silent one (see CallTracker.heard).
 */
export function createGoogleClients(
  config: {
    project: DrainConfig['project'];
    emulators: Pick<DrainConfig['emulators'], 'firestore' | 'pubsub'>;
    bigquery: Pick<DrainConfig['bigquery'], 'apiEndpoint' | 'location' | 'storageEndpoint'>;
  },
  onBigQueryError?: () => void,
): GoogleClients {
  const firestoreHost = config.emulators.firestore;
  const firestore = new Firestore({
    projectId: config.project,
    ignoreUndefinedProperties: true,
    ...(firestoreHost === null ? {} : emulatorEndpoint(firestoreHost)),
  });
  // A read that reaches a terminated client must fail, not end the process (see the patch).
  patchFirestoreTermination(firestore);
  const pubsub = new PubSub({
    projectId: config.project,
    ...(config.emulators.pubsub === null ? {} : { apiEndpoint: config.emulators.pubsub, emulatorMode: true }),
  });
  const bigquery = new BigQuery({
    projectId: config.project,
    ...(config.bigquery.location === null ? {} : { location: config.bigquery.location }),
    ...(config.bigquery.apiEndpoint === null ? {} : { apiEndpoint: config.bigquery.apiEndpoint }),
    ...(onBigQueryError === undefined
      ? {}
      : {
          retryOptions: {
            retryableErrorFn: (error: RetriedError) => {
              onBigQueryError();
              return retriedByDefault(error);
            },
          },
        }),
  });
  recordBigQueryCalls(bigquery);
  let writer: managedwriter.WriterClient | undefined;
  const storage = config.bigquery.storageEndpoint ?? null;
  return {
    firestore,
    pubsub,
    bigquery,
    bigqueryWriter() {
      writer ??= new managedwriter.WriterClient({
        projectId: config.project,
        ...(storage === null
          ? {}
          : {
              servicePath: storage.slice(0, storage.lastIndexOf(':')),
              port: Number(storage.slice(storage.lastIndexOf(':') + 1)),
              sslCreds: grpc.credentials.createInsecure(),
            }),
      });
      return writer;
    },
    async close() {
      writer?.close();
      await Promise.allSettled([firestore.terminate(), pubsub.close()]);
    },
  };
}

interface RetriedError {
  code?: number;
  errors?: { reason?: string }[];
}

/**
 * What BigQuery's client retries when no `retryableErrorFn` is given (@google-cloud/common's
 * `util.shouldRetryRequest`, not exported by the BigQuery package): giving one must not change it.
 */
export function retriedByDefault(error: RetriedError | null | undefined): boolean {
  if (!error) return false;
  if ([408, 429, 500, 502, 503, 504].includes(error.code ?? 0)) return true;
  return (error.errors ?? []).some(
    ({ reason }) =>
      reason === 'rateLimitExceeded' || reason === 'userRateLimitExceeded' || reason?.includes('EAI_AGAIN'),
  );
}

function emulatorEndpoint(hostPort: string): { host: string; port: number; ssl: false } {
  const at = hostPort.lastIndexOf(':');
  return { host: hostPort.slice(0, at), port: Number(hostPort.slice(at + 1)), ssl: false };
}
