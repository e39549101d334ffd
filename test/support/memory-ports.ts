/**
 * In-memory ports for unit tests of the pure drain loop only. They keep the contract the real adapters
 * keep (fencing by owner and epoch, continuity of commits, acknowledged dead letters), nothing more.
 */

import type { Alert, LivenessState } from '../../functions/drain/episodes.js';
import { DrainError, FencedError } from '../../functions/kernel/errors.js';
import type {
  CheckpointCommit,
  Checkpoints,
  CommitIntent,
  DeadLetters,
  Lease,
  Sink,
  Source,
  SourceReader,
} from '../../functions/kernel/ports.js';
import type {
  DeadLetter,
  FetchedBatch,
  KafkaRecord,
  PartitionRef,
  Row,
  RowResult,
  RowToWrite,
} from '../../functions/kernel/records.js';
import { partitionId } from '../../functions/kernel/records.js';
import type { RunSummary } from '../../functions/kernel/summary.js';
import { seekUndrained, type UndrainedRange } from '../../functions/kernel/undrained.js';
import { rowKey } from '../../functions/records/records.js';
import type { EncodedRow, StreamSink } from '../../functions/sinks/contracts.js';

export function record(topic: string, partition: number, offset: number, value: unknown): KafkaRecord {
  return {
    topic,
    partition,
    offset,
    timestamp: 1_700_000_000_000 + offset,
    key: null,
    value: typeof value === 'string' ? Buffer.from(value) : Buffer.from(JSON.stringify(value)),
    headers: {},
  };
}

export function createMemorySource(
  log: Map<string, KafkaRecord[]>,
  /** `sleep`: how a reader with nothing to return waits (a fake clock's, to keep wall time out of a test). */
  options: { fetchSize?: number; sleep?: (ms: number) => Promise<void> } = {},
) {
  const fetchSize = options.fetchSize ?? 10;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  let opened = 0;
  const source: Source & { opened(): number } = {
    opened: () => opened,
    async watermarks(topics) {
      return [...log.entries()]
        .map(([id, records]) => {
          const [topic, partition] = id.split('~') as [string, string];
          return {
            topic,
            partition: Number(partition),
            logStart: records[0]?.offset ?? 0,
            end: records.length === 0 ? 0 : records[records.length - 1]!.offset + 1,
          };
        })
        .filter((m) => topics.includes(m.topic));
    },
    async offsetsAt(topic, timestamp) {
      const found = new Map<number, number>();
      for (const [id, records] of log) {
        const [t, partition] = id.split('~') as [string, string];
        if (t !== topic) continue;
        const first = records.find((r) => r.timestamp >= timestamp);
        found.set(Number(partition), first?.offset ?? (records.at(-1)?.offset ?? -1) + 1);
      }
      return found;
    },
    async headTimestamps(positions) {
      const found = new Map<string, number | null>();
      for (const p of positions) {
        const first = (log.get(partitionId(p)) ?? []).find((r) => r.offset >= p.offset);
        found.set(partitionId(p), first?.timestamp ?? null);
      }
      return found;
    },
    async open(positions) {
      opened++;
      const cursors = new Map(positions.map((p) => [partitionId(p), p.offset]));
      const reader: SourceReader = {
        async next(signal) {
          for (;;) {
            if (signal.aborted) return undefined;
            for (const [id, offset] of cursors) {
              const records = (log.get(id) ?? []).filter((r) => r.offset >= offset).slice(0, fetchSize);
              if (records.length === 0) continue;
              const next = records[records.length - 1]!.offset + 1;
              cursors.set(id, next);
              const [topic, partition] = id.split('~') as [string, string];
              const batch: FetchedBatch = {
                topic,
                partition: Number(partition),
                fromOffset: offset,
                records,
                nextOffset: next,
              };
              return batch;
            }
            // Nothing left: wait like a long poll, until aborted.
            await sleep(5);
          }
        },
        finish(p) {
          cursors.delete(partitionId(p));
        },
        async close() {},
      };
      return reader;
    },
  };
  return source;
}

interface MemoryPartition {
  /** Moved by every write, as a Firestore document's update time. */
  version?: number;
  liveness?: LivenessState;
  lastProgressAt?: number;
  nextOffset: number | null;
  leaseOwner: string | null;
  leaseEpoch: number;
  leaseExpiresAt: number;
  intent?: CommitIntent | null;
  replayUntil?: number | null;
  undrained?: UndrainedRange[];
  /** An operator paused it: runs leave it alone. */
  paused?: boolean;
}

export function createMemoryCheckpoints(now: () => number) {
  const partitions = new Map<string, MemoryPartition>();
  const commits: CheckpointCommit[] = [];
  const runs: RunSummary[] = [];
  const held = (p: MemoryPartition | undefined, lease: Lease) => {
    if (!p || p.leaseOwner !== lease.owner || p.leaseEpoch !== lease.epoch || p.leaseExpiresAt <= now()) {
      throw new FencedError(`lease on ${partitionId(lease)} lost`);
    }
    return p;
  };
  const checkpoints: Checkpoints & {
    partitions: typeof partitions;
    commits: typeof commits;
    runs: typeof runs;
    checkpoint(p: PartitionRef): number | null;
    /** An operator's seek, as `reset` does it: the checkpoint moved, and how far it was before. */
    seek(p: PartitionRef, to: number): void;
  } = {
    partitions,
    commits,
    runs,
    checkpoint: (p) => partitions.get(partitionId(p))?.nextOffset ?? null,
    seek(ref, to) {
      const p = partitions.get(partitionId(ref))!;
      if (p.nextOffset !== null && to < p.nextOffset)
        p.replayUntil = Math.max(p.replayUntil ?? 0, p.nextOffset);
      p.undrained = seekUndrained(p.undrained ?? [], p.nextOffset, to, p.replayUntil ?? 0);
      p.nextOffset = to;
    },
    async peek(refs) {
      return refs.flatMap((ref) => {
        const p = partitions.get(partitionId(ref));
        return p === undefined
          ? []
          : [
              {
                topic: ref.topic,
                partition: ref.partition,
                nextOffset: p.nextOffset,
                leaseOwner: p.leaseOwner,
                leaseExpiresAt: p.leaseExpiresAt,
                paused: p.paused === true,
                version: p.version ?? 0,
              },
            ];
      });
    },
    async acquire(partition, owner, ttlMs) {
      const p = partitions.get(partitionId(partition)) ?? {
        nextOffset: null,
        leaseOwner: null,
        leaseEpoch: 0,
        leaseExpiresAt: 0,
      };
      if (p.leaseOwner !== null && p.leaseOwner !== owner && p.leaseExpiresAt > now()) return undefined;
      p.leaseOwner = owner;
      p.leaseEpoch++;
      p.version = (p.version ?? 0) + 1;
      p.leaseExpiresAt = now() + ttlMs;
      partitions.set(partitionId(partition), p);
      return {
        ...partition,
        owner,
        epoch: p.leaseEpoch,
        nextOffset: p.nextOffset,
        expiresAt: p.leaseExpiresAt,
        liveness: p.liveness,
        lastProgressAt: p.lastProgressAt ?? null,
        intent: p.intent ?? null,
        replayUntil: p.replayUntil ?? null,
        ...(p.undrained?.length ? { undrained: p.undrained } : {}),
        ...(p.paused ? { paused: true } : {}),
      };
    },
    async recordIntents(intents, ttlMs) {
      // All or none, as Firestore's batched write with preconditions.
      const docs = intents.map(({ lease, intent }) => {
        const p = held(partitions.get(partitionId(lease)), lease);
        if (p.nextOffset !== intent.fromOffset) throw new FencedError('checkpoint moved');
        return p;
      });
      return intents.map(({ lease, intent }, i) => {
        docs[i]!.intent = intent;
        docs[i]!.leaseExpiresAt = now() + ttlMs;
        return { ...lease, intent, expiresAt: docs[i]!.leaseExpiresAt };
      });
    },
    async renew(lease, ttlMs) {
      const p = held(partitions.get(partitionId(lease)), lease);
      p.leaseExpiresAt = now() + ttlMs;
      p.version = (p.version ?? 0) + 1;
      return { ...lease, expiresAt: p.leaseExpiresAt };
    },
    async commit(commit, ttlMs) {
      const p = held(partitions.get(partitionId(commit.lease)), commit.lease);
      if (p.nextOffset !== null && p.nextOffset !== commit.fromOffset)
        throw new FencedError('checkpoint moved');
      p.nextOffset = commit.nextOffset;
      const raised = (commit.heldUntil ?? 0) > (p.replayUntil ?? 0) ? { replayUntil: commit.heldUntil! } : {};
      Object.assign(p, raised);
      p.version = (p.version ?? 0) + 1;
      p.intent = null;
      p.leaseExpiresAt = now() + ttlMs;
      p.lastProgressAt = now();
      commits.push(commit);
      return { ...commit.lease, nextOffset: commit.nextOffset, expiresAt: p.leaseExpiresAt, ...raised };
    },
    async release(lease, liveness) {
      const p = partitions.get(partitionId(lease));
      if (p && p.leaseOwner === lease.owner && p.leaseEpoch === lease.epoch) {
        p.leaseOwner = null;
        p.version = (p.version ?? 0) + 1;
        if (liveness) p.liveness = liveness;
      }
    },
    async recordRun(summary) {
      runs.push(summary);
    },
  };
  return checkpoints;
}

export function createMemorySink(options: { reject?: (row: RowToWrite) => string | undefined } = {}) {
  const rows: RowToWrite[] = [];
  let failure: Error | undefined;
  const sink: Sink & { rows: RowToWrite[]; failWith(error: Error | undefined): void } = {
    rows,
    failWith: (error) => {
      failure = error;
    },
    async write(batch) {
      if (failure) throw failure;
      return batch.map((written): RowResult => {
        // A row made from its record's text: the object BigQuery would read from it.
        const row: RowToWrite =
          'json' in written ? { ...written, row: JSON.parse(written.json.toString()) as Row } : written;
        const reason = options.reject?.(row);
        if (reason !== undefined) return { ok: false, reason };
        rows.push(row);
        return { ok: true };
      });
    },
  };
  return sink;
}

export function createMemoryAlerts() {
  const sent: Alert[] = [];
  let failure: Error | undefined;
  return {
    sent,
    failWith(error: Error | undefined) {
      failure = error;
    },
    async publish(alert: Alert) {
      if (failure) throw failure;
      sent.push(alert);
    },
  };
}

export function createMemoryDeadLetters() {
  const letters: DeadLetter[] = [];
  let failure: Error | undefined;
  const deadLetters: DeadLetters & { letters: DeadLetter[]; failWith(error: Error | undefined): void } = {
    letters,
    failWith: (error) => {
      failure = error;
    },
    async publish(batch) {
      if (failure) throw failure;
      letters.push(...batch);
    },
  };
  return deadLetters;
}

/**
 * An in-memory Storage Write API: streams hold rows invisibly until committed, a stream commits once,
 * and a stream can be made to expire (gone). `table` and `errorTable` are what a reader would see.
 */
export function createMemoryStreamSink() {
  type Stream = { rows: RowToWrite[]; letters: DeadLetter[]; committed: boolean };
  const streams = new Map<string, Stream>();
  const table: RowToWrite[] = [];
  const errorTable: DeadLetter[] = [];
  let counter = 0;
  let failure: Error | undefined;
  let refusal: ((row: RowToWrite) => string | undefined) | undefined;
  const held = (p: PartitionRef, from: number, to: number, records: { record: KafkaRecord }[]) =>
    new Set(
      records
        .filter((r) => r.record.topic === p.topic && r.record.partition === p.partition)
        .map((r) => r.record.offset)
        .filter((o) => o >= from && o < to),
    ).size;
  const sink: StreamSink & {
    streams: typeof streams;
    /** How many times a run said it has records to read (`warmUp`). */
    warmed: number;
    table: typeof table;
    errorTable: typeof errorTable;
    commits: number;
    failWith(error: Error | undefined): void;
    /** As BigQuery refuses rows: those for which `why` says a reason are left out, as rejected letters. */
    refuseRows(why: ((row: RowToWrite) => string | undefined) | undefined): void;
    expire(stream: string): void;
  } = {
    streams,
    warmed: 0,
    table,
    errorTable,
    commits: 0,
    async warmUp() {
      sink.warmed += 1;
    },
    failWith(error) {
      failure = error;
    },
    refuseRows(why) {
      refusal = why;
    },
    expire(stream) {
      streams.delete(stream);
    },
    // Rows go as JSON bytes, and come back as rows when a stream takes them.
    async startEncoding() {
      const encoded: EncodedRow[] = [];
      return {
        add: (r) => encoded.push({ record: r.record, bytes: Buffer.from(JSON.stringify(r.row)) }),
        finish: () => encoded,
      };
    },
    async prepare(encoded, letters) {
      if (failure) throw failure;
      const made: string[] = [];
      const rejected: DeadLetter[] = [];
      const rows = encoded.map((e) => ({
        rowKey: rowKey(e.record),
        record: e.record,
        row: JSON.parse(Buffer.from(e.bytes).toString('utf8')) as Row,
      }));
      const accepted = rows.filter((row) => {
        const reason = refusal?.(row);
        if (reason !== undefined) rejected.push({ record: row.record, kind: 'rejected', message: reason });
        return reason === undefined;
      });
      if (accepted.length > 0) {
        const name = `target/streams/s${++counter}`;
        streams.set(name, { rows: accepted, letters: [], committed: false });
        made.push(name);
      }
      if (letters.length + rejected.length > 0) {
        const name = `errors/streams/s${++counter}`;
        streams.set(name, { rows: [], letters: [...letters, ...rejected], committed: false });
        made.push(name);
      }
      return { streams: made, rejected };
    },
    async commit(names) {
      if (failure) throw failure;
      for (const name of names) {
        const stream = streams.get(name);
        if (stream === undefined) throw new DrainError(`stream ${name} not found`, { retriable: false });
        if (stream.committed) continue; // already committed: counts as committed, adds nothing
        stream.committed = true;
        sink.commits++;
        table.push(...stream.rows);
        errorTable.push(...stream.letters);
      }
    },
    async streamState(name) {
      if (failure) throw failure;
      const stream = streams.get(name);
      return stream === undefined ? 'gone' : stream.committed ? 'committed' : 'pending';
    },
    async heldOffsets(p, from, to) {
      const offsets = (records: { record: KafkaRecord }[]) =>
        new Map(
          records
            .filter((r) => r.record.topic === p.topic && r.record.partition === p.partition)
            .filter((r) => r.record.offset >= from && r.record.offset < to)
            .map((r) => [r.record.offset, r.record.timestamp] as const),
        );
      return { rows: offsets(table), deadLetters: offsets(errorTable) };
    },
    async heldInRange(p, from, to) {
      return { rows: held(p, from, to, table), deadLetters: held(p, from, to, errorTable) };
    },
  };
  return sink;
}
