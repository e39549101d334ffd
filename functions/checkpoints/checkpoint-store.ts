import type { Firestore } from '@google-cloud/firestore';
import { grpcError } from '../google/grpc-errors.js';
import type { PartitionRef } from '../kernel/records.js';
import type { PartitionDoc } from './partition-doc.js';

/*
 * What the checkpoint modules share (leases, ledger, controls, run log): the store's contract, a document's
 * version, and how Firestore's refusals are told apart. compare-and-swap.ts makes the store.
 */

export function firestoreError(error: unknown, what: string): Error {
  return grpcError('firestore', error, what);
}

/** 9 FAILED_PRECONDITION / 6 ALREADY_EXISTS: someone wrote in between; read again and decide again. */
export function contended(error: unknown, attempt: number): boolean {
  const code = (error as { code?: unknown }).code;
  return (code === 9 || code === 6) && attempt < 10;
}

export interface Decision<T> {
  result: T;
  /** Fields to write; none means leave the document as it is. */
  write?: FirebaseFirestore.UpdateData<FirebaseFirestore.DocumentData>;
  alsoCreate?: [FirebaseFirestore.DocumentReference, FirebaseFirestore.DocumentData][];
}

/** What the checkpoint modules share: the database, the pipeline's documents, the clock. */
export interface CheckpointStore {
  readonly db: Firestore;
  readonly pipelineId: string;
  readonly clock: () => number;
  partitionRef(partition: PartitionRef): FirebaseFirestore.DocumentReference;
  /**
   * Read, decide, then write only if the document is still the version that was read (a precondition on
   * its update time), atomically with any documents created beside it. Optimistic on purpose: a
   * pessimistic transaction holds a lock between its read and its commit, and a run frozen in between
   * (GC pause, SIGSTOP, a suspended VM) would block the run taking over until the lock times out.
   * Those asked for in the same turn of the event loop share one read and one write (see `together`).
   */
  compareAndSwap<T>(
    what: string,
    ref: FirebaseFirestore.DocumentReference,
    decide: (data: PartitionDoc | undefined, now: number) => Decision<T>,
  ): Promise<T>;
  /**
   * The documents as they stand, for a write conditioned on their versions: those this run wrote last
   * (and no one since, which the write's precondition proves) from memory, the others read.
   */
  versions(refs: readonly FirebaseFirestore.DocumentReference[]): Promise<Version[]>;
  /** Remembers what a write conditioned on `versions` made of each document (`writes[i]` from `versions[i]`). */
  wrote(
    refs: readonly FirebaseFirestore.DocumentReference[],
    from: readonly Version[],
    writes: readonly FirebaseFirestore.UpdateData<FirebaseFirestore.DocumentData>[],
    at: readonly FirebaseFirestore.Timestamp[],
  ): void;
  /** Forgets the documents' remembered versions: a write conditioned on them was refused. */
  forget(refs: readonly FirebaseFirestore.DocumentReference[]): void;
}

/** A partition document at one version: what it holds, and its update time (none: it does not exist). */
export interface Version {
  readonly data: PartitionDoc | undefined;
  readonly updateTime: FirebaseFirestore.Timestamp | undefined;
  /** Read from Firestore, not remembered from this run's last write. */
  readonly read: boolean;
}

/**
 * A refusal after which the document must be read again: someone wrote in between (9, 6) or deleted it
 * (5). Nothing of the refused write landed, so deciding again on a fresh read is safe; after any other
 * error the write may have landed, and the caller gets the error as before.
 */
export function refused(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return code === 9 || code === 6 || code === 5;
}
