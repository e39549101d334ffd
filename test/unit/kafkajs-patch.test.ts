import { createRequire } from 'node:module';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { kafkajsPollPatched } from '../../functions/sources/kafkajs-patch.js';

// kafkajs's own RequestQueue (the class every broker connection uses), as the drain loads it.
const RequestQueue = createRequire(import.meta.url)('kafkajs/src/network/requestQueue/index.js');

function queue() {
  const logger = { debug() {}, info() {}, warn() {}, error() {} };
  return new RequestQueue({
    instrumentationEmitter: null,
    maxInFlightRequests: 1,
    requestTimeout: 30_000,
    enforceRequestTimeout: false,
    clientId: 'test',
    broker: 'localhost:9092',
    logger: { namespace: () => logger },
    isConnected: () => true,
  });
}

describe("kafkajs's request queue, patched (no poll every millisecond)", () => {
  afterEach(() => vi.useRealTimers());

  test('the installed kafkajs has the method the patch fixes, and it is patched', () => {
    expect(kafkajsPollPatched).toBe(true);
  });

  test('with nothing pending and no throttle, no timer is set (2.2.4 set one that set the next, forever)', () => {
    vi.useFakeTimers();
    const q = queue();
    q.checkPendingRequests();
    expect(q.throttleCheckTimeoutId).toBeFalsy();
    expect(vi.getTimerCount()).toBe(0);
  });

  test('a pending request is still checked for, and a throttle still waited out', () => {
    vi.useFakeTimers();
    const q = queue();
    q.pending.push({ correlationId: 1 });
    q.scheduleCheckPendingRequests();
    expect(vi.getTimerCount()).toBe(1);
    clearTimeout(q.throttleCheckTimeoutId);
    q.throttleCheckTimeoutId = null;
    q.pending.length = 0;
    q.throttledUntil = Date.now() + 500;
    q.scheduleCheckPendingRequests();
    expect(vi.getTimerCount()).toBe(1);
    clearTimeout(q.throttleCheckTimeoutId);
  });
});
