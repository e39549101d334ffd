import type { Firestore } from '@google-cloud/firestore';
import type { PartitionRef } from '../drain/types.js';
import { grpcError } from '../google/grpc-errors.js';
import type { PartitionDoc } from './partition-doc.js';

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
}

export function createCheckpointStore(
  db: Firestore,
  pipelineId: string,
  clock: () => number,
  partitionRef: CheckpointStore['partitionRef'],
): CheckpointStore {
  /** One compare-and-swap on its own: read, decide, write conditioned on the version read. */
  async function alone<T>(what: string, ref: DocumentRef, decide: Decide<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        const snapshot = await ref.get();
        const decision = decide(snapshot.data() as PartitionDoc | undefined, clock());
        if (decision.write === undefined) return decision.result;
        const batch = db.batch();
        addWrite(batch, ref, snapshot, decision);
        await batch.commit();
        return decision.result;
      } catch (error) {
        if (contended(error, attempt)) continue;
        throw firestoreError(error, what);
      }
    }
  }

  /**
   * The compare-and-swaps asked for in the same turn of the event loop (a flush's partitions committing
   * at once, the lease keeper renewing, a run's leases taken or given up) as one read of their documents
   * and one write, each document's write conditioned on its own version, so each keeps the guarantee of
   * one on its own. One whose decision throws is refused alone; should any document change between the
   * read and the write, nothing of the write lands and each is done on its own instead.
   */
  async function together(group: readonly Asked[]): Promise<void> {
    let snapshots: FirebaseFirestore.DocumentSnapshot[];
    try {
      snapshots = await db.getAll(...group.map((a) => a.ref));
    } catch (error) {
      for (const a of group) a.reject(firestoreError(error, a.what));
      return;
    }
    const now = clock();
    const batch = db.batch();
    const writing: { asked: Asked; result: unknown }[] = [];
    for (const [i, asked] of group.entries()) {
      const snapshot = snapshots[i]!;
      let decision: Decision<unknown>;
      try {
        decision = asked.decide(snapshot.data() as PartitionDoc | undefined, now);
      } catch (error) {
        asked.reject(firestoreError(error, asked.what));
        continue;
      }
      if (decision.write === undefined) asked.resolve(decision.result);
      else {
        addWrite(batch, asked.ref, snapshot, decision);
        writing.push({ asked, result: decision.result });
      }
    }
    if (writing.length === 0) return;
    try {
      await batch.commit();
    } catch (error) {
      for (const { asked } of writing) {
        if (contended(error, 1)) alone(asked.what, asked.ref, asked.decide).then(asked.resolve, asked.reject);
        else asked.reject(firestoreError(error, asked.what));
      }
      return;
    }
    for (const { asked, result } of writing) asked.resolve(result);
  }

  let asked: Asked[] = [];
  function send(): void {
    const group = asked;
    asked = [];
    // A document asked for twice in one turn (a renewal beside a commit) cannot be in one write twice.
    const paths = new Set<string>();
    const distinct: Asked[] = [];
    for (const a of group) {
      if (paths.has(a.ref.path)) alone(a.what, a.ref, a.decide).then(a.resolve, a.reject);
      else {
        paths.add(a.ref.path);
        distinct.push(a);
      }
    }
    if (distinct.length === 1) {
      const [a] = distinct as [Asked];
      alone(a.what, a.ref, a.decide).then(a.resolve, a.reject);
      return;
    }
    // Firestore long took at most 500 writes a request: an update and a created document each, at most.
    for (let at = 0; at < distinct.length; at += swapsPerWrite)
      void together(distinct.slice(at, at + swapsPerWrite));
  }

  return {
    db,
    pipelineId,
    clock,
    partitionRef,
    compareAndSwap<T>(what: string, ref: DocumentRef, decide: Decide<T>): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        asked.push({ what, ref, decide, resolve: resolve as (result: unknown) => void, reject });
        if (asked.length === 1) setImmediate(send);
      });
    },
  };
}

function addWrite(
  batch: FirebaseFirestore.WriteBatch,
  ref: DocumentRef,
  snapshot: FirebaseFirestore.DocumentSnapshot,
  decision: Decision<unknown>,
): void {
  if (snapshot.exists) batch.update(ref, decision.write!, { lastUpdateTime: snapshot.updateTime! });
  else batch.create(ref, decision.write!);
  for (const [doc, data] of decision.alsoCreate ?? []) batch.create(doc, data);
}

/** Compare-and-swaps sent in one Firestore write at most. */
const swapsPerWrite = 100;

type DocumentRef = FirebaseFirestore.DocumentReference;
type Decide<T> = (data: PartitionDoc | undefined, now: number) => Decision<T>;

interface Asked {
  what: string;
  ref: DocumentRef;
  decide: Decide<unknown>;
  resolve(result: unknown): void;
  reject(error: unknown): void;
}
