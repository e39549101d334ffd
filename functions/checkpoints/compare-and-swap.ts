import { FieldValue, type Firestore } from '@google-cloud/firestore';
import {
  type CheckpointStore,
  contended,
  type Decision,
  firestoreError,
  refused,
  type Version,
} from './checkpoint-store.js';
import type { PartitionDoc } from './partition-doc.js';

export function createCheckpointStore(
  db: Firestore,
  pipelineId: string,
  clock: () => number,
  partitionRef: CheckpointStore['partitionRef'],
): CheckpointStore {
  /**
   * What this run wrote last to each document, and the version that write made. A write conditioned on
   * such a version skips its read: the precondition proves that no one wrote since, so the decision is
   * made on what the document holds, as after a read. Refused, the version is forgotten and read again.
   */
  const known = new Map<string, Version>();

  async function versions(refs: readonly DocumentRef[]): Promise<Version[]> {
    const found = refs.map((ref) => known.get(ref.path));
    const unknown = refs.filter((_, i) => found[i] === undefined);
    if (unknown.length > 0) {
      const snapshots = await db.getAll(...unknown);
      let next = 0;
      for (const [i, version] of found.entries())
        if (version === undefined) found[i] = versionOf(snapshots[next++]!);
    }
    return found as Version[];
  }

  function wrote(
    refs: readonly DocumentRef[],
    from: readonly Version[],
    writes: readonly FirebaseFirestore.UpdateData<FirebaseFirestore.DocumentData>[],
    at: readonly FirebaseFirestore.Timestamp[],
  ): void {
    for (const [i, ref] of refs.entries()) {
      const data = applied(from[i]!.data, writes[i]!);
      if (data === undefined) known.delete(ref.path);
      else known.set(ref.path, { data, updateTime: at[i]!, read: false });
    }
  }

  function forget(refs: readonly DocumentRef[]): void {
    for (const ref of refs) known.delete(ref.path);
  }

  /** One compare-and-swap on its own: read (or remembered), decide, write conditioned on that version. */
  async function alone<T>(what: string, ref: DocumentRef, decide: Decide<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      let version: Version | undefined;
      try {
        [version] = (await versions([ref])) as [Version];
        const decision = decided(version, decide, clock());
        if (decision === undefined) {
          // Only a write is proven by its precondition: anything else is decided again on a read.
          forget([ref]);
          continue;
        }
        if (decision.write === undefined) return decision.result;
        const batch = db.batch();
        addWrite(batch, ref, version, decision);
        const [result] = await batch.commit();
        wrote([ref], [version], [decision.write], [result!.writeTime]);
        return decision.result;
      } catch (error) {
        forget([ref]);
        // A write on a remembered version refused: read it and decide again (not counted as contention).
        if (version?.read === false && refused(error)) continue;
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
    let found: Version[];
    try {
      found = await versions(group.map((a) => a.ref));
    } catch (error) {
      for (const a of group) a.reject(firestoreError(error, a.what));
      return;
    }
    const now = clock();
    const batch = db.batch();
    const writing: { asked: Asked; version: Version; decision: Decision<unknown>; index: number }[] = [];
    let writes = 0;
    for (const [i, asked] of group.entries()) {
      const version = found[i]!;
      let decision: Decision<unknown> | undefined;
      try {
        decision = decided(version, asked.decide, now);
      } catch (error) {
        asked.reject(firestoreError(error, asked.what));
        continue;
      }
      if (decision === undefined) {
        forget([asked.ref]);
        alone(asked.what, asked.ref, asked.decide).then(asked.resolve, asked.reject);
      } else if (decision.write === undefined) asked.resolve(decision.result);
      else {
        addWrite(batch, asked.ref, version, decision);
        writing.push({ asked, version, decision, index: writes });
        writes += 1 + (decision.alsoCreate?.length ?? 0);
      }
    }
    if (writing.length === 0) return;
    let results: FirebaseFirestore.WriteResult[];
    try {
      results = await batch.commit();
    } catch (error) {
      forget(writing.map((w) => w.asked.ref));
      for (const { asked } of writing) {
        if (contended(error, 1) || refused(error))
          alone(asked.what, asked.ref, asked.decide).then(asked.resolve, asked.reject);
        else asked.reject(firestoreError(error, asked.what));
      }
      return;
    }
    wrote(
      writing.map((w) => w.asked.ref),
      writing.map((w) => w.version),
      writing.map((w) => w.decision.write!),
      writing.map((w) => results[w.index]!.writeTime),
    );
    for (const { asked, decision } of writing) asked.resolve(decision.result);
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
    versions,
    wrote,
    forget,
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
  version: Version,
  decision: Decision<unknown>,
): void {
  if (version.updateTime !== undefined)
    batch.update(ref, decision.write!, { lastUpdateTime: version.updateTime });
  else batch.create(ref, decision.write!);
  for (const [doc, data] of decision.alsoCreate ?? []) batch.create(doc, data);
}

/**
 * The decision on a version; on one remembered rather than read, only a write is taken (its precondition
 * proves the version current when it lands): a refusal or a decision to write nothing gives undefined, to
 * be decided again on a read, so that every outcome but a write is decided exactly as before.
 */
function decided<T>(version: Version, decide: Decide<T>, now: number): Decision<T> | undefined {
  if (version.read) return decide(version.data, now);
  try {
    const decision = decide(version.data, now);
    return decision.write === undefined ? undefined : decision;
  } catch {
    return undefined;
  }
}

function versionOf(snapshot: FirebaseFirestore.DocumentSnapshot): Version {
  return snapshot.exists
    ? { data: snapshot.data() as PartitionDoc, updateTime: snapshot.updateTime!, read: true }
    : { data: undefined, updateTime: undefined, read: true };
}

const deleted = FieldValue.delete();

/**
 * The document after an update of top-level fields, as Firestore makes it; undefined where this cannot
 * be sure (a field path, a transform such as an increment), so that the next write reads the document.
 */
export function applied(
  data: PartitionDoc | undefined,
  write: FirebaseFirestore.UpdateData<FirebaseFirestore.DocumentData>,
): PartitionDoc | undefined {
  const next: Record<string, unknown> = { ...data };
  for (const [field, value] of Object.entries(write)) {
    if (field.includes('.')) return undefined;
    if (value instanceof FieldValue) {
      if (!value.isEqual(deleted)) return undefined;
      delete next[field];
    } else if (value !== undefined) next[field] = value;
  }
  return next as unknown as PartitionDoc;
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
