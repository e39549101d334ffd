/**
 * Test-only: with KBD_RECORD_GOOGLE_CALLS naming a file, every call the official clients send to a
 * Google API is appended to it as one line, as it leaves the process: gRPC calls by their method path
 * (`/google.firestore.v1.Firestore/Commit`), BigQuery's REST calls by HTTP method and path. The
 * permissions test (test/e2e/permissions.test.ts) reads them: each must be declared in api-methods.ts,
 * and need no permission beyond the roles of the account its command runs as. Never set in production.
 */
import { appendFileSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';

let recordTo: string | null = null;

function record(line: string): void {
  if (recordTo !== null) appendFileSync(recordTo, `${line}\n`);
}

type CreateCall = (this: grpc.Channel, method: string, ...rest: unknown[]) => unknown;

/** Starts recording when the environment asks for it (once per process). */
export function recordGoogleCalls(env: Readonly<Record<string, string | undefined>>): void {
  const file = env.KBD_RECORD_GOOGLE_CALLS?.trim();
  if (file === undefined || file === '' || recordTo !== null) return;
  recordTo = file;
  // Every gRPC call of every client, whatever its kind (unary, streaming), is made through its channel's
  // createCall (the client's own methods are captured by grpc-js when it loads: patching them misses).
  const prototype = grpc.Channel.prototype as unknown as { createCall: CreateCall };
  const original = prototype.createCall;
  prototype.createCall = function (this: grpc.Channel, method: string, ...rest: unknown[]) {
    record(`grpc ${method}`);
    return original.call(this, method, ...rest);
  };
}

interface RequestOptions {
  method?: string;
  uri?: string;
  url?: string;
}

/** BigQuery's client (REST): each request it makes, its load uploads included, recorded when recording. */
export function recordBigQueryCalls(bigquery: { makeAuthenticatedRequest: unknown }): void {
  if (recordTo === null) return;
  const original = bigquery.makeAuthenticatedRequest as (
    options: RequestOptions,
    ...rest: unknown[]
  ) => unknown;
  const wrapped = (options: RequestOptions, ...rest: unknown[]) => {
    const uri = options.uri ?? options.url ?? '';
    record(`rest ${(options.method ?? 'GET').toUpperCase()} ${new URL(uri, 'http://x').pathname}`);
    return original(options, ...rest);
  };
  bigquery.makeAuthenticatedRequest = Object.assign(wrapped, original);
}
