/**
 * When the run shares work: after its own share, with more than one task, and not once stopped. The share
 * phase is watched (its real code still runs), so that a run that called it when it must not fails here,
 * whether or not that call would have found anything to take.
 */
import { beforeEach, describe, expect, test, vi } from 'vitest';
import { shareWork } from '../../functions/drain/share-phase.js';
import { createMemoryLogger } from '../../functions/kernel/logger.js';
import type { KafkaRecord } from '../../functions/kernel/records.js';
import { testDrainOptions } from '../support/drain-options.js';
import { createFakeClock } from '../support/fake-clock.js';
import {
  createMemoryCheckpoints,
  createMemoryDeadLetters,
  createMemorySink,
  createMemorySource,
  record,
} from '../support/memory-ports.js';
import { runDrain } from '../support/run-drain.js';

vi.mock('../../functions/drain/share-phase.js', async (actual) => {
  const real = await actual<typeof import('../../functions/drain/share-phase.js')>();
  return { shareWork: vi.fn(real.shareWork) };
});

function world(partitions: number) {
  const clock = createFakeClock();
  const log = new Map<string, KafkaRecord[]>();
  for (let p = 0; p < partitions; p++)
    log.set(
      `t~${p}`,
      Array.from({ length: 2 }, (_, o) => record('t', p, o, { n: o })),
    );
  const ports = {
    source: createMemorySource(log, { sleep: (ms) => clock.timers.sleep(ms) }),
    checkpoints: createMemoryCheckpoints(clock.now),
    sink: createMemorySink(),
    deadLetters: createMemoryDeadLetters(),
  };
  const shutdown = new AbortController();
  const context = {
    logger: createMemoryLogger(),
    now: clock.now,
    timers: clock.timers,
    signal: shutdown.signal,
  };
  return { clock, ports, context, shutdown };
}

describe('sharing work between tasks', () => {
  beforeEach(() => {
    vi.mocked(shareWork).mockClear();
  });

  test("with two tasks, once its own share is drained, a run looks at the other task's partitions", async () => {
    const { clock, ports, context } = world(4);
    const summary = await clock.run(runDrain(ports, { ...testDrainOptions, taskCount: 2 }, context));
    expect(vi.mocked(shareWork)).toHaveBeenCalledTimes(1);
    // The other task never started: its partitions were taken and drained here.
    expect(summary.partitions.filter((p) => p.shared)).toHaveLength(2);
    expect(summary.recordsRead).toBe(8);
  });

  test('with one task, a run never shares', async () => {
    const { clock, ports, context } = world(4);
    const summary = await clock.run(runDrain(ports, { ...testDrainOptions, taskCount: 1 }, context));
    expect(vi.mocked(shareWork)).not.toHaveBeenCalled();
    expect(summary.recordsRead).toBe(8);
  });

  test('once stopped, a run shares nothing, even with partitions of another task waiting', async () => {
    const { clock, ports, context, shutdown } = world(4);
    const write = ports.sink.write.bind(ports.sink);
    ports.sink.write = async (rows, signal) => {
      shutdown.abort(); // SIGTERM while the run drains its own share
      return write(rows, signal);
    };
    const summary = await clock.run(runDrain(ports, { ...testDrainOptions, taskCount: 2 }, context));
    expect(summary.stopReason).toBe('signal');
    expect(vi.mocked(shareWork)).not.toHaveBeenCalled();
    expect(summary.partitions.filter((p) => p.shared)).toEqual([]);
  });
});
