import { createHash, randomBytes } from 'node:crypto';
import type { BigQuery } from '@google-cloud/bigquery';
import { DrainError } from '../../kernel/errors.js';
import type { Lease } from '../../kernel/ports.js';
import { defaultRetryPolicy, withRetry } from '../../kernel/retry.js';
import { sleep } from '../../kernel/timers.js';
import { bigQueryError } from '../../sinks/bigquery-tables.js';
import { headerOf, type LoadUpload, request, resumableUpload } from './load-upload.js';

export { type LoadUpload, uploadChunkBytes } from './load-upload.js';

/**
 * BigQuery load jobs by upload (jobs.insert through the media upload endpoint, multipart: the job's
 * configuration and its newline-delimited JSON in one request, no bucket), and what became of one.
 *
 * A job id is used once per project: a second insert under an id BigQuery knows answers 409 and loads
 * nothing, so submitting again under the same id is how a lost answer is survived. A load job is atomic:
 * when it fails it loaded nothing; its row errors name each bad row by the byte position it starts at.
 */
export interface LoadJobs {
  /** Submits the job under `jobId`; true when this call created it, false when the id existed (409). */
  submit(jobId: string, lines: Buffer, signal?: AbortSignal): Promise<boolean>;
  /**
   * Opens a resumable upload of the job `jobId` (issue #67's streamed load): its data goes out in chunks as
   * it is written, and the job is made only when the upload completes (`finish`): an upload never
   * finished makes no job. Undefined when the id exists already (409).
   */
  open(jobId: string, signal?: AbortSignal): Promise<LoadUpload | undefined>;
  /** What became of the job (jobs.get): `missing` when BigQuery has no job of that id. */
  state(jobId: string): Promise<LoadJobState>;
}

/** The table a load job writes (its destination), or a load target's. */
export interface LoadTable {
  readonly dataset: string;
  readonly table: string;
}

/** What BigQuery says of a job id: missing, or the job's state and the table it loads (its destination). */
export type LoadJobState =
  | { readonly state: 'missing' }
  | { readonly state: 'running' | 'done'; readonly destination?: LoadTable }
  | {
      readonly state: 'failed';
      readonly message: string;
      /** The byte positions (in the job's data) of the rows BigQuery refused, with why. */
      readonly badRows: ReadonlyMap<number, string>;
      readonly destination?: LoadTable;
    };

export interface LoadJobsOptions {
  readonly bigquery: BigQuery;
  readonly project: string;
  readonly dataset: string;
  readonly table: string;
  readonly location: string | null;
}

export function createLoadJobs(options: LoadJobsOptions): LoadJobs {
  const { bigquery, project, dataset, table, location } = options;
  const endpoint =
    (bigquery as unknown as { apiEndpoint?: string }).apiEndpoint ?? 'https://bigquery.googleapis.com';
  const uploadUri = `${endpoint.replace(/\/$/, '')}/upload/bigquery/v2/projects/${encodeURIComponent(project)}/jobs`;

  const jobOf = (jobId: string) => ({
    jobReference: { projectId: project, jobId, ...(location === null ? {} : { location }) },
    configuration: {
      load: {
        destinationTable: { projectId: project, datasetId: dataset, tableId: table },
        sourceFormat: 'NEWLINE_DELIMITED_JSON',
        // The table is made and evolved before its loads: a load never creates or changes it.
        createDisposition: 'CREATE_NEVER',
        writeDisposition: 'WRITE_APPEND',
        ignoreUnknownValues: false,
        maxBadRecords: 0,
      },
    },
  });

  return {
    async open(jobId, signal) {
      let session: string;
      try {
        const { response } = await request(bigquery, {
          method: 'POST',
          uri: uploadUri,
          qs: { uploadType: 'resumable' },
          headers: { 'Content-Type': 'application/json; charset=UTF-8' },
          body: Buffer.from(JSON.stringify(jobOf(jobId))),
          ...(signal === undefined ? {} : { signal }),
        });
        session = headerOf(response, 'location') ?? '';
        if (session === '') throw new DrainError('BigQuery opened no upload session', { retriable: true });
      } catch (error) {
        if ((error as { code?: unknown }).code === 409) return undefined;
        throw bigQueryError(error, `open the upload of load job ${jobId}`);
      }
      return resumableUpload(bigquery, session, jobId);
    },

    async submit(jobId, lines, signal) {
      const job = jobOf(jobId);
      const boundary = `kbd${randomBytes(12).toString('hex')}`;
      const body = Buffer.concat([
        Buffer.from(
          `--${boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n${JSON.stringify(job)}\r\n` +
            `--${boundary}\r\nContent-Type: application/octet-stream\r\n\r\n`,
        ),
        lines,
        Buffer.from(`\r\n--${boundary}--\r\n`),
      ]);
      try {
        await request(bigquery, {
          method: 'POST',
          uri: uploadUri,
          qs: { uploadType: 'multipart' },
          headers: { 'Content-Type': `multipart/related; boundary=${boundary}` },
          body,
          ...(signal === undefined ? {} : { signal }),
        });
        return true;
      } catch (error) {
        if ((error as { code?: unknown }).code === 409) return false;
        throw bigQueryError(error, `submit load job ${jobId}`);
      }
    },

    async state(jobId) {
      let metadata: JobMetadata;
      try {
        [metadata] = (await bigquery
          .job(jobId, location === null ? {} : { location })
          .getMetadata()) as unknown as [JobMetadata];
      } catch (error) {
        if ((error as { code?: unknown }).code === 404) return { state: 'missing' };
        throw bigQueryError(error, `get load job ${jobId}`);
      }
      const status = metadata.status ?? {};
      const to = metadata.configuration?.load?.destinationTable;
      const destination =
        to?.datasetId === undefined || to.tableId === undefined
          ? {}
          : { destination: { dataset: to.datasetId, table: to.tableId } };
      if (status.state !== 'DONE') return { state: 'running', ...destination };
      if (status.errorResult === undefined || status.errorResult === null)
        return { state: 'done', ...destination };
      const badRows = new Map<number, string>();
      for (const e of status.errors ?? []) {
        const position = /row starting at position (\d+)/.exec(e.message ?? '');
        if (position !== null) badRows.set(Number(position[1]), e.message ?? 'invalid');
      }
      return {
        state: 'failed',
        message: `${status.errorResult.reason ?? 'error'}: ${status.errorResult.message ?? ''}`.trim(),
        badRows,
        ...destination,
      };
    },
  };
}

interface JobMetadata {
  configuration?: { load?: { destinationTable?: { datasetId?: string; tableId?: string } } };
  status?: {
    state?: string;
    errorResult?: { reason?: string; message?: string } | null;
    errors?: { reason?: string; message?: string }[];
  };
}

/**
 * The job id of a flush's attempt: the table's prefix, a digest of its partitions' ranges and lease epochs
 * (a range read again under a new lease is a new job), and the attempt. Letters, digits, `_` and `-`.
 */
export function jobIdOf(
  prefix: string,
  items: readonly { lease: Lease; fromOffset: number; nextOffset: number }[],
  attempt: number,
): string {
  const digest = createHash('sha256');
  for (const i of items)
    digest.update(
      `${i.lease.topic}\u0000${i.lease.partition}\u0000${i.lease.epoch}\u0000${i.fromOffset}\u0000${i.nextOffset}\n`,
    );
  return `${prefix}_${digest.digest('hex').slice(0, 32)}_${attempt}`;
}

/**
 * How a target's load jobs are named: the prefix of its job ids, unique to the pipeline, dataset and table
 * (a digest of the three names as given: two tables of one name in two datasets, or names that read alike
 * once joined or cut, never share one), the prefix the releases before it used (`legacyPrefix`:
 * `kbd_load_{pipeline}_{table}`, kept to recover their intents), and the table itself.
 */
export interface LoadNaming {
  readonly prefix: string;
  readonly legacyPrefix: string;
  readonly table: LoadTable;
}

export function loadNaming(pipelineId: string, dataset: string, table: string): LoadNaming {
  const digest = createHash('sha256')
    .update(`${pipelineId}\u0000${dataset}\u0000${table}`)
    .digest('hex')
    .slice(0, 16);
  // Readable for an operator, cut well inside the 1,024 characters of a job id; the digest makes it unique.
  const readable = `${pipelineId}_${dataset}_${table}`.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 400);
  return {
    prefix: `kbd_load_${readable}_t${digest}`,
    legacyPrefix: `kbd_load_${pipelineId}_${table}`.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 900),
    table: { dataset, table },
  };
}

export const sameTable = (a: LoadTable, b: LoadTable): boolean =>
  a.dataset === b.dataset && a.table === b.table;

/**
 * BigQuery answered 409 for `jobId` (it knows the id): the job is ours only when it loads `table` (its id
 * carries the range's digest and lease epoch, so a job of this id and table is this range's). Another
 * table's job under the id stops the partition: nothing is committed that the table does not hold.
 */
export async function claimExisting(jobs: LoadJobs, jobId: string, table: LoadTable): Promise<void> {
  const existing = await withRetry(defaultRetryPolicy, () => jobs.state(jobId));
  if (existing.state === 'missing')
    throw new DrainError(`load job ${jobId} was refused as existing, but BigQuery has no such job`, {
      retriable: true,
    });
  const to = existing.destination;
  if (to !== undefined && sameTable(to, table)) return;
  throw new DrainError(
    `load job ${jobId} exists already and loads ${to === undefined ? 'no table' : `${to.dataset}.${to.table}`}, ` +
      `not ${table.dataset}.${table.table}: two tables share the job id, so this range's records for ` +
      `${table.dataset}.${table.table} are not loaded and the partition is not committed`,
    { retriable: false, code: 'load_job_collision' },
  );
}

/** Polls the job until it is no longer running, or `maxWaitMs` passed or `signal` fired (then: running). */
export async function waitForJob(
  jobs: LoadJobs,
  id: string,
  maxWaitMs: number,
  signal?: AbortSignal,
): Promise<LoadJobState> {
  const began = Date.now();
  for (let delay = 100; ; delay = Math.min(delay * 2, 2_000)) {
    const state = await withRetry(defaultRetryPolicy, () => jobs.state(id), undefined, signal);
    if (state.state !== 'running' || Date.now() - began >= maxWaitMs) return state;
    await sleep(delay, signal); // returns at once when the signal has fired
    if (signal?.aborted) return state;
  }
}
