import { crashPoint } from '../../kernel/crash-points.js';
import { DrainError } from '../../kernel/errors.js';
import type { Logger } from '../../kernel/logger.js';
import type { DeadLetters, Writer } from '../../kernel/ports.js';
import { defaultRetryPolicy, type RetryPolicy, withRetry } from '../../kernel/retry.js';
import { type ChangePolicy, classifyChanges, primaryKeyOfKey } from '../../records/changes.js';
import type { RowShape } from '../../records/records.js';
import { publishDeadLetters } from '../dead-letters.js';
import type { ChangeSink } from './cdc-sink.js';

/** The cdc sink, and the table made ready for a primary key (created with it, or checked). */
export interface ChangePorts {
  readonly changes: ChangeSink;
  /** Called once a primary key is known, before the first append; idempotent. */
  readonly ready: (primaryKey: readonly string[]) => Promise<void>;
}

export interface CdcWriterOptions extends ChangePorts {
  readonly deadLetters: DeadLetters;
  /** `primaryKey` empty: taken from the first keyed record (Debezium: the key's fields). */
  readonly policy: ChangePolicy;
  readonly now: () => number;
  readonly logger: Logger;
  /** Transient failures of the appends and of making the table (default: defaultRetryPolicy). */
  readonly retry?: RetryPolicy;
}

/**
 * `cdc` mode (exactly once in effect): each batch's changes go to the table's default stream as upserts
 * and deletes by primary key, sequenced by offset, its dead letters to the error table (keyed by origin)
 * and then to Pub/Sub; the drain then commits. Nothing to recover and nothing to look up on a replay: a
 * change written again carries the sequence number it had, and BigQuery keeps each key's latest.
 */
export function createCdcWriter(options: CdcWriterOptions): Writer {
  let primaryKey = options.policy.primaryKey;
  return {
    recover: async () => ({}),
    begin: async () => {},
    async write(batch, signal) {
      const retry = options.retry ?? defaultRetryPolicy;
      const again = (what: string) => (error: unknown, attempt: number, delayMs: number) =>
        options.logger.warn(`${what} failed; again`, { error, attempt, delayMs });
      if (primaryKey.length === 0) {
        const keyed = batch.records.find((r) => r.key !== null);
        const derived = keyed === undefined ? undefined : primaryKeyOfKey(keyed.key);
        if (derived === undefined && batch.records.some((r) => r.value !== null))
          throw new DrainError(
            'cdc mode: BQ_PRIMARY_KEY is not set and the records carry no JSON key to take it from; set BQ_PRIMARY_KEY',
            { retriable: false, code: 'primary_key' },
          );
        primaryKey = derived ?? [];
      }
      if (primaryKey.length > 0)
        await withRetry(retry, () => options.ready(primaryKey), again('making the cdc table ready'), signal);
      const ingestedAt = new Date(options.now());
      const policy = { ...options.policy, primaryKey };
      // Changes straight from their bytes where a compiled path applies (#42): upserts, and Debezium Avro's
      // deletes; the rest as they were.
      const shape = directChanges(policy);
      const encoding =
        shape === undefined
          ? undefined
          : await withRetry(
              retry,
              () => options.changes.startEncoding(shape, policy.valueFormat, primaryKey),
              again('encoding the batch'),
              signal,
            );
      const { rows, letters, tombstones } = await classifyChanges(
        batch.records,
        policy,
        ingestedAt,
        encoding === undefined ? undefined : (record) => encoding.addRecord(record, ingestedAt),
      );
      const encoded = encoding?.finish() ?? [];
      // Applying again is harmless: the same changes with the same sequence numbers, letters keyed by origin.
      const rejected = await withRetry(
        retry,
        () => options.changes.apply(rows, letters, ingestedAt, encoded),
        again('applying the changes'),
        signal,
      );
      const all = [...letters, ...rejected];
      crashPoint('after-error-table');
      await publishDeadLetters(all, options.deadLetters);
      crashPoint('after-dead-letter-before-commit');
      return { rows: rows.length + encoded.length - rejected.length, deadLetters: all.length, tombstones };
    },
  };
}

/**
 * The shape a route's changes may be written by straight from their bytes: keyed values, and Debezium's
 * envelopes in a registry format (their compiled rows are the `after` row's, or a delete's key from
 * `before`: route-values.ts's `afterRow`; Debezium's JSON is unwrapped on the general path), without
 * business rules, source columns or sanitized names.
 */
function directChanges(policy: ChangePolicy): RowShape | undefined {
  const { shape } = policy;
  return (policy.format === 'upsert' || policy.valueFormat !== undefined) &&
    shape !== undefined &&
    policy.primaryKey.length > 0 &&
    policy.rules === undefined &&
    policy.sourceColumns !== true &&
    shape.fieldNames !== 'sanitize'
    ? shape
    : undefined;
}
