/** One caller's item in a flush, and how its caller is answered. */
export interface Waiting<I, R> {
  readonly item: I;
  resolve(result: R): void;
  reject(error: unknown): void;
}

export interface FlushQueue<I, R> {
  /** Resolves with what the flush that took the item made of it. */
  add(item: I): Promise<R>;
  /** An item handed in is not answered yet (a flush of it may still be on the wire). */
  readonly busy: boolean;
}

/**
 * Gathers what concurrent callers hand in into flushes, one at a time: while a flush runs, items wait,
 * and the next flush takes those waiting (up to `maxWeight` and `maxItems`, at least one). `flush`
 * answers each member (it may fail some and keep the others); members it leaves unanswered when it throws
 * fail with its error.
 */
export function createFlushQueue<I, R>(
  flush: (members: Waiting<I, R>[]) => Promise<void>,
  limit: {
    readonly weigh: (item: I) => number;
    readonly maxWeight: number;
    /** Items a flush takes at most (default: no bound). */
    readonly maxItems?: number;
  } = {
    weigh: () => 0,
    maxWeight: Number.POSITIVE_INFINITY,
  },
): FlushQueue<I, R> {
  const maxItems = limit.maxItems ?? Number.POSITIVE_INFINITY;
  const waiting: Waiting<I, R>[] = [];
  let flushing = false;
  let unanswered = 0;

  function nextGroup(): Waiting<I, R>[] {
    let weight = 0;
    let take = 0;
    while (take < waiting.length && take < maxItems) {
      const next = limit.weigh(waiting[take]!.item);
      if (take > 0 && weight + next > limit.maxWeight) break;
      weight += next;
      take++;
    }
    return waiting.splice(0, take);
  }

  function start(): void {
    if (flushing) return;
    flushing = true;
    void (async () => {
      while (waiting.length > 0) {
        const group = nextGroup();
        await flush(group).catch((error: unknown) => {
          for (const m of group) m.reject(error); // those already answered keep their answer
        });
      }
      flushing = false;
    })();
  }

  return {
    add(item) {
      unanswered++;
      let answered = false;
      const answer = (): void => {
        if (!answered) unanswered--;
        answered = true;
      };
      return new Promise<R>((resolve, reject) => {
        waiting.push({
          item,
          resolve: (result) => {
            answer();
            resolve(result);
          },
          reject: (error) => {
            answer();
            reject(error);
          },
        });
        start();
      });
    },
    get busy() {
      return unanswered > 0;
    },
  };
}
