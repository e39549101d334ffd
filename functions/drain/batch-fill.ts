import type { FetchedBatch, KafkaRecord } from '../kernel/records.js';
import { recordSize } from '../records/records.js';

/**
 * Consecutive fetches of a partition, waiting to be written as one batch (read-phase.ts): joined up to the
 * batch limits, never past them, so that a backlog is written in batches of the limits' size, not one
 * fetch (~2 MiB) and then remainders.
 */
export interface Waiting {
  readonly first: FetchedBatch;
  readonly parts: (readonly KafkaRecord[])[];
  nextOffset: number;
  records: number;
  bytes: number;
  /** At the limits: no fetch joins it any more. */
  full: boolean;
  /** Set while it waits for its partition's next fetch before it is written: cancels that wait. */
  hold?: () => void;
}

export interface BatchLimits {
  readonly maxRecords: number;
  readonly maxBytes: number;
}

/**
 * A fetch joins `waiting` as far as the limits leave room; `rest` is what did not fit (or the whole fetch,
 * when it does not follow on from `waiting` or `waiting` is full). Returns the bytes and records that joined.
 */
export function joinFetched(
  waiting: Waiting,
  fetched: FetchedBatch,
  limits: BatchLimits,
): { bytes: number; records: number; rest?: FetchedBatch } {
  if (waiting.full || waiting.nextOffset !== fetched.fromOffset)
    return { bytes: 0, records: 0, rest: fetched };
  const { fits, bytes, rest } = cutFetched(
    fetched,
    limits.maxRecords - waiting.records,
    limits.maxBytes - waiting.bytes,
    false,
  );
  if (fits !== undefined) {
    waiting.parts.push(fits.records);
    waiting.nextOffset = fits.nextOffset;
    waiting.records += fits.records.length;
    waiting.bytes += bytes;
  }
  waiting.full = rest !== undefined || atLimits(waiting, limits);
  const records = fits?.records.length ?? 0;
  return rest === undefined ? { bytes, records } : { bytes, records, rest };
}

/** A batch begun with a fetch: as much of it as the limits take (at least one record), and the rest. */
export function beginWaiting(
  fetched: FetchedBatch,
  limits: BatchLimits,
): { waiting: Waiting; rest?: FetchedBatch } {
  const { fits, bytes, rest } = cutFetched(fetched, limits.maxRecords, limits.maxBytes, true);
  const first = fits ?? fetched;
  const waiting: Waiting = {
    first,
    parts: [first.records],
    nextOffset: first.nextOffset,
    records: first.records.length,
    bytes,
    full: false,
  };
  waiting.full = rest !== undefined || atLimits(waiting, limits);
  return rest === undefined ? { waiting } : { waiting, rest };
}

/**
 * What a record holds in memory besides its key's and value's bytes, about: its objects (ours and
 * kafkajs's message) and its key's and value's views of the fetch. The bound on what is in flight counts it,
 * so that small records are bounded by what they cost, not by their bytes alone (issue #67: a million
 * 176-byte records held 2.5 times their bytes in the heap).
 */
export const recordHeapBytes = 512;

/** What a batch's records hold in memory (the in-flight bound's measure): their bytes and objects. */
export function heldBytes(bytes: number, records: number): number {
  return bytes + records * recordHeapBytes;
}

/** The fetches joined, as one. */
export function joined(waiting: Waiting): FetchedBatch {
  if (waiting.parts.length === 1) return waiting.first;
  return { ...waiting.first, records: waiting.parts.flat(), nextOffset: waiting.nextOffset };
}

function atLimits(waiting: Waiting, limits: BatchLimits): boolean {
  return waiting.records >= limits.maxRecords || waiting.bytes >= limits.maxBytes;
}

/**
 * Cuts a fetch after as many records as `maxRecords` and `maxBytes` allow (at least one with `atLeastOne`):
 * the part before the cut ends at the first record after it, which the rest starts from.
 */
function cutFetched(
  fetched: FetchedBatch,
  maxRecords: number,
  maxBytes: number,
  atLeastOne: boolean,
): { fits?: FetchedBatch; bytes: number; rest?: FetchedBatch } {
  const { records } = fetched;
  let count = 0;
  let bytes = 0;
  while (count < records.length && count < maxRecords) {
    const size = recordSize(records[count]!);
    if (bytes + size > maxBytes && !(atLeastOne && count === 0)) break;
    bytes += size;
    count++;
  }
  if (count === records.length) return { fits: fetched, bytes };
  if (count === 0) return { bytes: 0, rest: fetched };
  const cut = records[count]!.offset;
  return {
    fits: { ...fetched, records: records.slice(0, count), nextOffset: cut },
    bytes,
    rest: { ...fetched, fromOffset: cut, records: records.slice(count) },
  };
}
