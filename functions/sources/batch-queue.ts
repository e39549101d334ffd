import type { FetchedBatch } from '../kernel/records.js';

/**
 * A small bounded hand-over between a push-style consumer (kafkajs `eachBatch`) and the pull-style
 * drain loop. `push` resolves true once the batch is queued, waiting while the queue is full; it resolves
 * false if the queue was closed first (the batch was not handed over).
 */
export function createBatchQueue(capacity: number) {
  const items: FetchedBatch[] = [];
  const waitingPushers: (() => void)[] = [];
  let waitingTaker: ((batch: FetchedBatch | undefined) => void) | undefined;
  let failure: Error | undefined;
  let closed = false;

  function wakePushers(): void {
    while (waitingPushers.length > 0 && (items.length < capacity || closed)) waitingPushers.shift()!();
  }

  return {
    async push(batch: FetchedBatch): Promise<boolean> {
      while (!closed && items.length >= capacity) {
        await new Promise<void>((resolve) => waitingPushers.push(resolve));
      }
      if (closed) return false;
      if (waitingTaker) {
        const taker = waitingTaker;
        waitingTaker = undefined;
        taker(batch);
      } else {
        items.push(batch);
      }
      return true;
    },

    take(signal: AbortSignal): Promise<FetchedBatch | undefined> {
      if (failure) return Promise.reject(failure);
      const ready = items.shift();
      if (ready) {
        wakePushers();
        return Promise.resolve(ready);
      }
      if (closed || signal.aborted) return Promise.resolve(undefined);
      return new Promise((resolve, reject) => {
        const onAbort = (): void => {
          waitingTaker = undefined;
          resolve(undefined);
        };
        signal.addEventListener('abort', onAbort, { once: true });
        waitingTaker = (batch) => {
          signal.removeEventListener('abort', onAbort);
          if (failure) reject(failure);
          else resolve(batch);
        };
      });
    },

    fail(error: Error): void {
      failure = error;
      waitingTaker?.(undefined);
    },

    close(): void {
      closed = true;
      waitingTaker?.(undefined);
      waitingTaker = undefined;
      wakePushers();
    },
  };
}
