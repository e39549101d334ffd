import { LatencySketch } from '../kernel/freshness.js';
import type { Lease } from '../kernel/ports.js';
import type { KafkaRecord, PartitionRef, Watermarks } from '../kernel/records.js';
import type { PartitionSummary } from '../kernel/summary.js';

/** Why a run left a partition before its end: for its summary line. */
export interface Leaving {
  readonly skipped?: NonNullable<PartitionSummary['skipped']>;
  /** Why the partition cannot move until something changes (see PartitionSummary.waiting). */
  readonly waiting?: string;
  /** The records were held back on purpose (a quota spent): `backlog` opens whatever the lag. */
  readonly heldBack?: boolean;
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
  #lastRenewedAt: number;
  /** The first record fetched at a position (for the partition's freshness at the run's end). */
  #head: { position: number; timestamp: number } | undefined;
  readonly #latency = new LatencySketch();
  /** Offsets below it were committed before an operator's seek: a replay, left out of latency. */
  readonly #replayUntil: number;
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
    this.#lastRenewedAt = init.at;
    this.#replayUntil = init.lease.replayUntil ?? 0;
    if (this.#replayUntil > init.position) this.#summary.replayUntil = this.#replayUntil;
    this.#onLeft = onLeft;
  }

  /** The latency of the records this run committed of the partition. */
  get latency(): LatencySketch {
    return this.#latency;
  }

  /** The timestamp of the record at the checkpoint, if this run fetched it (undefined: not known here). */
  get headTimestamp(): number | undefined {
    // A replayed record's age is not the partition's freshness (measureFreshness reads past the replay).
    if (this.#position < this.#replayUntil) return undefined;
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

  /** Records left between the checkpoint and the end seen at start. */
  get lag(): number {
    return Math.max(0, this.end - this.#position);
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
    this.#summary.lag = this.end - from;
  }

  /** A commit landed: the checkpoint stands at `nextOffset`, under `lease`. */
  advance(lease: Lease, nextOffset: number, at: number): void {
    this.#lease = lease;
    this.#position = nextOffset;
    this.#lastRenewedAt = at;
    this.#summary.to = nextOffset;
    this.#summary.lag = this.lag;
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

  /** A renewal landed; an older answer than the lease held (a commit overtook it) changes nothing. */
  renewed(lease: Lease): void {
    if (!this.#done && lease.expiresAt > this.#lease.expiresAt) this.#lease = lease;
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
    for (const record of records) {
      if (record.offset >= this.#replayUntil) this.#latency.add(committedAt - record.timestamp);
    }
    const { rows, deadLetters, tombstones } = counts;
    this.#summary.read += records.length;
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
