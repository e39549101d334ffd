import { LatencySketch } from '../kernel/freshness.js';
import type { Lease } from '../kernel/ports.js';
import type { KafkaRecord, PartitionRef, Watermarks } from '../kernel/records.js';
import type { PartitionSummary } from '../kernel/summary.js';
import { replayOf } from '../kernel/undrained.js';

/** Why a run left a partition before its end: for its summary line. */
export interface Leaving {
  readonly skipped?: NonNullable<PartitionSummary['skipped']>;
  /** Why the partition cannot move until something changes (see PartitionSummary.waiting). */
  readonly waiting?: string;
  /** The records were held back on purpose (a quota spent): `backlog` opens whatever the lag. */
  readonly heldBack?: boolean;
}

/** A batch a deferring writer took, waiting for its `settle` to be committed (issue #67). */
export interface TakenBatch {
  readonly fromOffset: number;
  readonly nextOffset: number;
  readonly records: number;
  /** The records' timestamps, for their latency once committed (a replay's left out). */
  readonly timestamps: readonly number[];
  readonly lastRecordTimestamp: number | null;
  readonly rows: number;
  readonly deadLetters: number;
  readonly tombstones: number;
  readonly filtered: number;
}

/**
 * One leased partition in one run, and the only place its state changes. Its transitions: `advance` (a
 * commit landed: the checkpoint and the lease move), `renewed` (a renewal landed), and `leave` (the run is
 * done with it: reached its end, fenced, given up, or waiting). Leaving happens once; it aborts the
 * write in flight (`abandoned`) and tells whoever reads the partition (`onLeft`), so that nobody else
 * flips flags.
 */
export class PartitionLease {
  readonly mark: Watermarks;
  /** The checkpoint as this run found it. */
  readonly startCheckpoint: number | null;
  readonly summary: Readonly<PartitionSummary>;
  #lease: Lease;
  #summary: PartitionSummary;
  #lost: { from: number; to: number; skipped: boolean } | undefined;
  #heldBack = false;
  #position: number;
  /** Where reading goes on: the checkpoint, or past it by the batches a deferring writer took. */
  #read: number;
  #taken: TakenBatch[] = [];
  #leaseLost = false;
  #lastRenewedAt: number;
  /** The first record fetched at a position (for the partition's freshness at the run's end). */
  #head: { position: number; timestamp: number } | undefined;
  readonly #latency = new LatencySketch();
  /** Offsets committed before an operator's seek back (kernel/undrained.ts): a replay. */
  readonly #replay: ReturnType<typeof replayOf>;
  #liveEnd = 0; // following the log: the end read at the run's end
  #renewing = false;
  #done = false;
  readonly #abandon = new AbortController();
  readonly #onLeft: (partition: PartitionRef) => void;

  constructor(
    init: { lease: Lease; mark: Watermarks; summary: PartitionSummary; position: number; at: number },
    onLeft: (partition: PartitionRef) => void,
  ) {
    this.#lease = init.lease;
    this.mark = init.mark;
    this.startCheckpoint = init.lease.nextOffset;
    this.#summary = init.summary;
    this.summary = init.summary;
    this.#position = init.position;
    this.#read = init.position;
    this.#lastRenewedAt = init.at;
    this.#replay = replayOf(init.lease.replayUntil ?? 0, init.lease.undrained ?? [], init.position);
    this.#replay.mark(this.#summary, init.position);
    this.#onLeft = onLeft;
  }

  /** The latency of the records this run committed of the partition. */
  get latency(): LatencySketch {
    return this.#latency;
  }

  /** The timestamp of the record at the checkpoint, if this run fetched it (undefined: not known here). */
  get headTimestamp(): number | undefined {
    // A replayed record's age is not the partition's freshness (measureFreshness reads past the replay).
    if (this.#position < this.#replay.endFrom(this.#position)) return undefined;
    return this.#head?.position === this.#position ? this.#head.timestamp : undefined;
  }

  /** The partition's line gets the latency of the records committed so far (the run's end). */
  latencyInLine(): void {
    if (this.#latency.count > 0) this.#summary.latencyMs = this.#latency.figures();
  }

  /** A batch about to be written starts at the checkpoint with `first`. */
  fetchedAt(position: number, first: KafkaRecord): void {
    this.#head = { position, timestamp: first.timestamp };
  }

  /** The lease as last granted, renewed or recorded with an intent: every commit names it. */
  get lease(): Lease {
    return this.#lease;
  }

  /** The checkpoint as last committed (or planned, before the first read). */
  get position(): number {
    return this.#position;
  }

  /** Where the next batch starts: the checkpoint, unless a deferring writer took batches past it. */
  get readPosition(): number {
    return this.#read;
  }

  /** The batches a deferring writer took and the checkpoint does not hold yet, in offset order. */
  get taken(): readonly TakenBatch[] {
    return this.#taken;
  }

  /** A deferring writer took a batch (or Kafka skipped offsets after one it took): reading goes on past it. */
  took(batch: TakenBatch): void {
    this.#taken.push(batch);
    this.#read = batch.nextOffset;
  }

  /**
   * The lease could not be kept while batches a deferring writer took wait (the partition may be done):
   * they must not be made durable by this run (settle-phase.ts).
   */
  get leaseLost(): boolean {
    return this.#leaseLost;
  }

  leaseGone(): void {
    if (this.#taken.length > 0) this.#leaseLost = true;
  }

  /** The taken batches were committed (or will be read again by the next run): none is waiting now. */
  settled(): TakenBatch[] {
    const taken = this.#taken;
    this.#taken = [];
    this.#read = this.#position;
    return taken;
  }

  /** When the lease was last extended (a commit or a renewal sent). */
  get lastRenewedAt(): number {
    return this.#lastRenewedAt;
  }

  /** A renewal is on the wire (renewals never pile up behind a service that does not answer). */
  get renewing(): boolean {
    return this.#renewing;
  }

  /** Records deleted by retention before they were drained, seen at the start of this run. */
  /** The run left the partition's records on purpose (see Leaving.heldBack). */
  get heldBack(): boolean {
    return this.#heldBack;
  }

  get lost(): { from: number; to: number; skipped: boolean } | undefined {
    return this.#lost;
  }

  /** The end offset seen at start: this run reads up to here and no further. */
  get end(): number {
    return this.mark.end;
  }

  get done(): boolean {
    return this.#done;
  }

  /** Aborted when the run leaves the partition: a write still in flight is abandoned, uncommitted. */
  get abandoned(): AbortSignal {
    return this.#abandon.signal;
  }

  /** The latest end seen: at the start, or at the run's end when following the log. */
  get latestEnd(): number {
    return Math.max(this.end, this.#liveEnd);
  }
  /** Records left between the checkpoint and the latest end seen. */
  get lag(): number {
    return Math.max(0, this.latestEnd - this.#position);
  }

  /** Following the log, the end read again at the run's end: lag and `backlog` against it (issue #78). */
  seesEnd(end: number): void {
    this.#liveEnd = Math.max(this.#liveEnd, end);
    if (this.#summary.skipped === undefined && this.#summary.to !== null) this.#summary.lag = this.lag;
  }

  /** The start is planned: the partition's line reads from `from`. */
  planned(from: number, lost?: { from: number; to: number; skipped: boolean }): void {
    this.#summary.from = this.#summary.to = from;
    if (lost !== undefined) this.#lost = lost;
  }

  /** The partition waits at `from` (a retention gap, a checkpoint past the end): its line says the lag. */
  waitsAt(from: number): void {
    this.#summary.lag = Math.max(0, this.end - from);
  }

  /** Reading starts at `from`. */
  startsAt(from: number): void {
    this.#position = from;
    this.#read = from;
    this.#summary.lag = this.end - from;
  }

  /** A commit landed: the checkpoint stands at `nextOffset`, under `lease`. */
  advance(lease: Lease, nextOffset: number, at: number): void {
    this.#lease = lease;
    this.#position = nextOffset;
    if (this.#read < nextOffset) this.#read = nextOffset;
    this.#lastRenewedAt = at;
    this.#summary.to = nextOffset;
    this.#summary.lag = this.lag;
    this.#replay.mark(this.#summary, nextOffset);
  }

  /** A flush's intent was recorded under the lease (storage-write): the commit goes under the lease it left. */
  intentRecorded(lease: Lease): void {
    this.#lease = lease;
  }

  /** A renewal was sent at `at`. */
  renewalSent(at: number): void {
    this.#lastRenewedAt = at;
    this.#renewing = true;
  }

  /** The renewal sent answered, either way. */
  renewalSettled(): void {
    this.#renewing = false;
  }

  /**
   * A renewal landed; an older answer than the lease held (a commit overtook it) changes nothing. A partition
   * done but for batches a deferring writer took keeps it too: its lease must outlive the writer's settle (a
   * million-record load ran for a minute after its last read; the lease lapsed and nothing was committed).
   */
  renewed(lease: Lease): void {
    const kept = !this.#done || this.#taken.length > 0;
    if (kept && lease.expiresAt > this.#lease.expiresAt) this.#lease = lease;
  }

  /**
   * A committed batch: counted in the partition's line (what this run wrote, not what a replay found held),
   * and its records' latency at `committedAt`, but for those a seek made it write again.
   */
  counted(
    records: readonly KafkaRecord[],
    committedAt: number,
    counts: { rows: number; deadLetters: number; tombstones: number; filtered?: number },
  ): void {
    this.countedTaken(this.latencyTimestamps(records), records.length, committedAt, counts);
  }

  /** The timestamps of the records whose latency counts (a seek's replay left out). */
  latencyTimestamps(records: readonly KafkaRecord[]): number[] {
    return records.filter((r) => !this.#replay.replayed(r.offset)).map((r) => r.timestamp);
  }

  /** Committed batches a deferring writer took: their latency at `committedAt`, their counts in the line. */
  countedTaken(
    timestamps: readonly number[],
    records: number,
    committedAt: number,
    counts: { rows: number; deadLetters: number; tombstones: number; filtered?: number },
  ): void {
    for (const timestamp of timestamps) this.#latency.add(committedAt - timestamp);
    const { rows, deadLetters, tombstones } = counts;
    this.#summary.read += records;
    this.#summary.rowsWritten += rows;
    this.#summary.deadLettered += deadLetters;
    if (tombstones > 0) this.#summary.tombstonesSkipped = (this.#summary.tombstonesSkipped ?? 0) + tombstones;
    if (counts.filtered) this.#summary.filtered = (this.#summary.filtered ?? 0) + counts.filtered;
  }

  /** The run is done with the partition (see the class). Only the first call counts. */
  leave(why: Leaving = {}): void {
    if (this.#done) return;
    this.#done = true;
    if (why.skipped !== undefined) this.#summary.skipped = why.skipped;
    if (why.waiting !== undefined) this.#summary.waiting = why.waiting;
    this.#heldBack = why.heldBack === true;
    this.#abandon.abort();
    this.#onLeft(this.#lease);
  }
}
