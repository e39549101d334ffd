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
  return {
    db,
    pipelineId,
    clock,
    partitionRef,
    async compareAndSwap(what, ref, decide) {
      for (let attempt = 1; ; attempt++) {
        try {
          const snapshot = await ref.get();
          const decision = decide(snapshot.data() as PartitionDoc | undefined, clock());
          if (decision.write === undefined) return decision.result;
          const batch = db.batch();
          if (snapshot.exists) batch.update(ref, decision.write, { lastUpdateTime: snapshot.updateTime! });
          else batch.create(ref, decision.write);
          for (const [doc, data] of decision.alsoCreate ?? []) batch.create(doc, data);
          await batch.commit();
          return decision.result;
        } catch (error) {
          if (contended(error, attempt)) continue;
          throw firestoreError(error, what);
        }
      }
    },
  };
}
