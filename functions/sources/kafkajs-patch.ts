/**
 * kafkajs 2.2.4's request queue polls itself every millisecond for as long as a connection is open,
 * whether or not a request waits (tulios/kafkajs#1556 and #1704; the fix, PR #1667, was never released):
 * `scheduleCheckPendingRequests` sets a timer at `throttledUntil - now`, which is negative when nothing
 * is throttled, and the timer schedules the next. A drain waiting on BigQuery with a few broker
 * connections open spent about 60 ms of CPU a second on it (the bench's paced null sink).
 *
 * Patched here, once, as that PR does: with no request pending and no throttle to wait out, nothing is
 * scheduled. Nothing is lost by it: a request that cannot go at once is pushed to `pending` and schedules
 * its own check, and every response checks the queue again. Applied only to the method as 2.2.4 has it:
 * a kafkajs whose method differs is left alone (and the test of this patch says so).
 */
// Imported, not required at run time: the job's bundle (dist/job.mjs) then holds one kafkajs, and this
// patches the request queue its connections use.
import RequestQueueModule from 'kafkajs/src/network/requestQueue/index.js';

interface RequestQueueLike {
  pending: unknown[];
  throttledUntil: number;
  throttleCheckTimeoutId: unknown;
  scheduleCheckPendingRequests(): void;
}

/** Marks the prototype once patched (a second copy of this module must not wrap the method again). */
const patched = Symbol.for('kafka-bigquery-drain.kafkajs-poll-patch');

/** Whether the queue's method is the one this patch fixes (and so was patched). */
export const kafkajsPollPatched: boolean = (() => {
  const RequestQueue = RequestQueueModule as {
    prototype: RequestQueueLike & { [patched]?: true };
  };
  const proto = RequestQueue.prototype;
  if (proto[patched]) return true;
  const original = proto.scheduleCheckPendingRequests;
  const source = String(original);
  if (!source.includes('this.throttledUntil - Date.now()') || !source.includes('this.pending.length > 0'))
    return false;
  proto.scheduleCheckPendingRequests = function (this: RequestQueueLike) {
    if (this.pending.length === 0 && this.throttledUntil - Date.now() <= 0) return;
    original.call(this);
  };
  proto[patched] = true;
  return true;
})();
