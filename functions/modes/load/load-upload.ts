/**
 * A load job's data by BigQuery's upload endpoint: the client's authenticated request to it, and a
 * resumable upload (issue #67's streamed load): chunks named by `Content-Range`, each answered 308, the
 * last naming the total, whose answer is the job. https://cloud.google.com/bigquery/docs/reference/api-uploads
 */
import type { BigQuery } from '@google-cloud/bigquery';
import { DrainError } from '../../kernel/errors.js';
import { bigQueryError } from '../../sinks/bigquery-tables.js';

/** A load's data on its way to BigQuery: at most one chunk held here, whatever the load's size. */
export interface LoadUpload {
  /** Takes the load's next lines; a chunk goes out whenever one is full. */
  write(lines: Buffer, signal?: AbortSignal): Promise<void>;
  /** Sends the rest and completes the upload: the job is made now; false when its id was taken (409). */
  finish(signal?: AbortSignal): Promise<boolean>;
  /** Bytes taken so far (the byte positions of bad rows count from the first). */
  readonly bytes: number;
}

/** A resumable upload's chunks are multiples of 256 KiB (the last aside); 8 MiB at a time. */
export const uploadChunkBytes = 32 * 256 * 1024;

/** The client's authenticated request, with an absolute URI (the upload endpoint is not under its base). */
export function request(
  bigquery: BigQuery,
  options: {
    method: string;
    uri: string;
    qs?: Record<string, string>;
    headers: Record<string, string>;
    body: Buffer;
    signal?: AbortSignal;
  },
): Promise<{ body: unknown; response: unknown }> {
  return new Promise((resolve, reject) => {
    // A stop already come sends nothing (a listener added to a fired signal never fires).
    if (options.signal?.aborted) {
      reject(new DrainError('load job submission aborted', { retriable: true }));
      return;
    }
    // Removed once the request settles: the run's signal outlives it, and its listener holds the body.
    const onAbort = (): void => {
      call?.abort?.();
      reject(new DrainError('load job submission aborted', { retriable: true }));
    };
    const call = (
      bigquery as unknown as {
        request(
          o: object,
          callback: (error: Error | null, body?: unknown, response?: unknown) => void,
        ): { abort?(): void };
      }
    ).request(options, (error, body, response) => {
      options.signal?.removeEventListener('abort', onAbort);
      if (error) reject(error);
      else resolve({ body, response });
    });
    options.signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** A response header, from the client's answer or the error it made of a status it did not expect. */
export function headerOf(response: unknown, name: string): string | undefined {
  const headers = (response as { headers?: Record<string, string | string[]> } | undefined)?.headers;
  const value = headers?.[name] ?? headers?.[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The chunks of a resumable upload (the protocol of Google's media uploads): each PUT names its bytes
 * (`Content-Range: bytes first-last/*`) and is answered 308 with what arrived; the last names the total,
 * and its answer is the job. One chunk is held at a time.
 */
export function resumableUpload(bigquery: BigQuery, session: string, jobId: string): LoadUpload {
  // The session URI's query goes as the request's own (the client adds its parameters to that, not to the URI).
  const url = new URL(session);
  const uri = `${url.origin}${url.pathname}`;
  const qs = Object.fromEntries(url.searchParams);
  /** The chunk being filled: one buffer for the whole upload, sent when full and filled again. */
  let chunk: Buffer | undefined;
  let filled = 0;
  let sent = 0;
  const put = async (data: Buffer, total: number | '*', signal?: AbortSignal): Promise<unknown> => {
    const range = data.length === 0 ? `bytes */${total}` : `bytes ${sent}-${sent + data.length - 1}/${total}`;
    try {
      const { body } = await request(bigquery, {
        method: 'PUT',
        uri,
        qs,
        headers: { 'Content-Range': range, 'Content-Type': 'application/octet-stream' },
        body: data,
        ...(signal === undefined ? {} : { signal }),
      });
      sent += data.length;
      return body;
    } catch (error) {
      // 308 Resume Incomplete: the chunk arrived, the upload goes on.
      if ((error as { code?: unknown }).code === 308 && total === '*') {
        sent += data.length;
        return undefined;
      }
      throw error;
    }
  };
  // Batches of several partitions write at once: their chunks go one after the other, each from where the
  // last ended. A chunk that fails ends the upload (it makes no job; the run's load is read again).
  let chain: Promise<unknown> = Promise.resolve();
  let broken: unknown;
  const serial = <T>(work: () => Promise<T>): Promise<T> => {
    const next = chain.then(() => {
      if (broken !== undefined) throw broken;
      return work().catch((error: unknown) => {
        broken = error;
        throw error;
      });
    });
    chain = next.catch(() => {});
    return next;
  };
  return {
    get bytes() {
      return sent + filled;
    },
    write: (lines, signal) =>
      serial(async () => {
        for (let at = 0; at < lines.length; ) {
          chunk ??= Buffer.allocUnsafe(uploadChunkBytes);
          const copied = lines.copy(chunk, filled, at);
          filled += copied;
          at += copied;
          if (filled < chunk.length) continue;
          try {
            // Answered before the chunk is filled again: the request is done with it.
            await put(chunk, '*', signal);
          } catch (error) {
            throw bigQueryError(error, `upload load job ${jobId}`);
          }
          filled = 0;
        }
      }),
    finish: (signal) =>
      serial(async () => {
        const rest = chunk === undefined ? Buffer.alloc(0) : chunk.subarray(0, filled);
        try {
          await put(rest, sent + rest.length, signal);
          chunk = undefined;
          filled = 0;
          return true;
        } catch (error) {
          if ((error as { code?: unknown }).code === 409) return false;
          throw bigQueryError(error, `complete load job ${jobId}`);
        }
      }),
  };
}
