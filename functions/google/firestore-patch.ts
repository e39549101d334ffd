/**
 * @google-cloud/firestore 8.7's reads do not survive its own `terminate()`: `Firestore.requestStream`
 * (every `get`, `getAll` and query) hands its work to the client pool with `void this._clientPool.run(...)`
 * and waits on a deferred that only that work settles. Once the pool is terminated, `run` rejects at once
 * without running the work: the rejection is unhandled (Node's default ends the process there, with no
 * run summary) and the read never settles. Any read that reaches the pool after the run closed its
 * clients does it: a compare-and-swap tried again after contention, a call abandoned at its deadline that
 * goes on. (Seen in the service-faults e2e: a job died on an unhandled "The client has already been
 * terminated".)
 *
 * Patched here, once per pool class, reached through an instance (the class is not exported): a
 * terminated pool runs the work with a client whose every method throws the terminated error, so that the
 * work's own `catch` settles the read with it, as any other failure of the call would. The error carries
 * gRPC's CANCELLED, which Firestore's retry takes as final. Only a pool whose `run` is the one 8.7 has is
 * patched (the test of this patch says whether it applied).
 */
import type { Firestore } from '@google-cloud/firestore';

const terminatedMessage = 'The client has already been terminated';
const cancelled = 1;

interface ClientPoolLike {
  terminated: boolean;
  run(requestTag: string, requiresGrpc: boolean, op: (client: unknown) => Promise<unknown>): Promise<unknown>;
}

/** Marks the prototype once patched. */
const patched = Symbol.for('kafka-bigquery-drain.firestore-terminate-patch');

/** Patches the pool class of this client (once for all its instances); whether it is patched. */
export function patchFirestoreTermination(firestore: Firestore): boolean {
  const pool = (firestore as unknown as { _clientPool?: ClientPoolLike })._clientPool;
  if (pool === undefined) return false;
  const proto = Object.getPrototypeOf(pool) as ClientPoolLike & { [patched]?: true };
  if (proto[patched]) return true;
  const original = proto.run;
  const source = String(original);
  if (!source.includes('this.terminated') || !source.includes('CLIENT_TERMINATED_ERROR_MSG')) return false;
  proto.run = function (this: ClientPoolLike, requestTag, requiresGrpc, op) {
    if (!this.terminated) return original.call(this, requestTag, requiresGrpc, op);
    const error = Object.assign(new Error(terminatedMessage), { code: cancelled });
    const client = new Proxy(
      {},
      {
        get() {
          throw error;
        },
      },
    );
    try {
      return Promise.resolve(op(client));
    } catch (thrown) {
      return Promise.reject(thrown);
    }
  };
  proto[patched] = true;
  return true;
}
