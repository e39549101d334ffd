import { describe, expect, test } from 'vitest';
import { planStart } from '../../functions/drain/partition-start.js';

const mark = { topic: 't', partition: 0, logStart: 100, end: 200 };

describe('planStart: where a leased partition starts', () => {
  test('a checkpoint inside the log: read from it, nothing to pin', () => {
    expect(planStart(150, 150, mark, 'fail')).toEqual({ action: 'read', from: 150, pin: false });
  });

  test('caught up: idle', () => {
    expect(planStart(200, 200, mark, 'fail')).toEqual({ action: 'idle', from: 200, pin: false });
  });

  test('never checkpointed: the resolved start is pinned by a first commit, idle or not', () => {
    expect(planStart(100, null, mark, 'fail')).toEqual({ action: 'read', from: 100, pin: true });
    expect(planStart(200, null, mark, 'fail')).toEqual({ action: 'idle', from: 200, pin: true });
  });

  test('below the log start under fail: the partition waits, the lost range named', () => {
    expect(planStart(40, 40, mark, 'fail')).toEqual({
      action: 'retention-gap-wait',
      from: 40,
      lost: { from: 40, to: 100, skipped: false },
    });
  });

  test('below the log start under skip: the lost range is committed as such, reading goes on from the log start', () => {
    expect(planStart(40, 40, mark, 'skip')).toEqual({
      action: 'read',
      from: 100,
      pin: false,
      lost: { from: 40, to: 100, skipped: true },
    });
    // Never checkpointed, started below the log (START_POSITION offsets): the lost commit pins it already.
    expect(planStart(40, null, { ...mark, end: 100 }, 'skip')).toMatchObject({ action: 'idle', pin: false });
  });

  test('past the end (topic re-created): an error, nothing read', () => {
    expect(planStart(250, 250, mark, 'skip')).toEqual({ action: 'past-end', from: 250 });
  });
});
