import { describe, expect, test } from 'vitest';
import { emptyLiveness, evaluateEpisodes, type Observation } from '../../functions/drain/episodes.js';

const thresholds = { idleSeconds: 60, stallSeconds: 120, backlogRecords: 1000, backlogGrowingRuns: 3 };
const at = (seconds: number) => 1_800_000_000_000 + seconds * 1000;
const seen = (o: Partial<Observation>): Observation => ({
  pipeline: 'p',
  topic: 't',
  partition: 0,
  now: at(0),
  logStart: 0,
  end: 10,
  checkpointBefore: 10,
  checkpointAfter: 10,
  lastProgressAt: at(0),
  ...o,
});

describe('alert episodes', () => {
  test('idle opens once after the threshold, stays quiet while it lasts, resolves once when records come', () => {
    let state = evaluateEpisodes(emptyLiveness, seen({ now: at(0) }), thresholds).state;
    const opened = evaluateEpisodes(state, seen({ now: at(61) }), thresholds);
    expect(opened.alerts).toEqual([
      expect.objectContaining({
        kind: 'idle',
        state: 'open',
        since: new Date(at(0)).toISOString(),
        detail: 'no new record for 61 s',
      }),
    ]);
    state = opened.state;
    const again = evaluateEpisodes(state, seen({ now: at(300) }), thresholds);
    expect(again.alerts).toEqual([]);
    const resolved = evaluateEpisodes(
      again.state,
      seen({ now: at(310), end: 12, checkpointAfter: 12 }),
      thresholds,
    );
    expect(resolved.alerts).toEqual([expect.objectContaining({ kind: 'idle', state: 'resolved' })]);
    expect(resolved.state.openAlerts).toEqual({});
  });

  test('a partition with records waiting is not idle; stalled opens when its checkpoint does not move', () => {
    const first = evaluateEpisodes(
      emptyLiveness,
      seen({ now: at(0), end: 50, checkpointAfter: 10, lastProgressAt: at(0) }),
      thresholds,
    );
    expect(first.alerts).toEqual([]);
    const stalled = evaluateEpisodes(
      first.state,
      seen({ now: at(130), end: 50, checkpointAfter: 10, lastProgressAt: at(0) }),
      thresholds,
    );
    expect(stalled.alerts).toEqual([expect.objectContaining({ kind: 'stalled', state: 'open' })]);
    const moving = evaluateEpisodes(
      stalled.state,
      seen({ now: at(140), end: 50, checkpointBefore: 10, checkpointAfter: 30, lastProgressAt: at(140) }),
      thresholds,
    );
    expect(moving.alerts).toEqual([expect.objectContaining({ kind: 'stalled', state: 'resolved' })]);
  });

  test('retention gap names the lost range; fail keeps it open, skip opens and resolves it in the same run', () => {
    const fail = evaluateEpisodes(
      emptyLiveness,
      seen({ logStart: 20, end: 30, checkpointAfter: 5, lost: { from: 5, to: 20, skipped: false } }),
      thresholds,
    );
    expect(fail.alerts).toEqual([
      expect.objectContaining({ kind: 'retention_gap', state: 'open', lostFrom: 5, lostTo: 20 }),
    ]);
    const stillFailing = evaluateEpisodes(
      fail.state,
      seen({ logStart: 20, end: 30, checkpointAfter: 5, lost: { from: 5, to: 20, skipped: false } }),
      thresholds,
    );
    expect(stillFailing.alerts.filter((a) => a.kind === 'retention_gap')).toEqual([]);
    const skip = evaluateEpisodes(
      emptyLiveness,
      seen({ logStart: 20, end: 30, checkpointAfter: 30, lost: { from: 5, to: 20, skipped: true } }),
      thresholds,
    );
    expect(skip.alerts.map((a) => [a.kind, a.state, a.lostFrom, a.lostTo])).toEqual([
      ['retention_gap', 'open', 5, 20],
      ['retention_gap', 'resolved', 5, 20],
    ]);
  });

  test('following the log: the live end opens backlog above the threshold; its noise never grows a backlog or a stall', () => {
    // A follower leaves its last linger's records: lag against the end read at the run's end, 1-40 of them.
    let state = emptyLiveness;
    // Each run reads past the end it saw at its start (records keep coming) and leaves 1-40 behind.
    for (const [i, live] of [1, 5, 12, 40].entries()) {
      const [now, end, after] = [at(1_000 + i * 60), 100 * i + 50, 100 * (i + 1)];
      const observed = { now, end, checkpointBefore: 100 * i, checkpointAfter: after, lastProgressAt: now };
      const r = evaluateEpisodes(state, seen({ ...observed, liveEnd: after + live }), thresholds);
      expect(r.alerts).toEqual([]);
      state = r.state;
    }
    // Falling behind: past the threshold against the live end, though the end seen at the start is met.
    const behind = evaluateEpisodes(
      state,
      seen({ now: at(2_000), end: 450, checkpointBefore: 400, checkpointAfter: 500, liveEnd: 2_000 }),
      thresholds,
    );
    expect(behind.alerts).toEqual([
      expect.objectContaining({ kind: 'backlog', state: 'open', detail: '1500 records left after the run' }),
    ]);
  });

  test('backlog opens above the threshold or when the lag grows run after run, and resolves when drained', () => {
    const big = evaluateEpisodes(
      emptyLiveness,
      seen({ end: 5000, checkpointBefore: 0, checkpointAfter: 2000 }),
      thresholds,
    );
    expect(big.alerts).toEqual([
      expect.objectContaining({ kind: 'backlog', state: 'open', detail: '3000 records left after the run' }),
    ]);
    let state = emptyLiveness;
    const alerts = [];
    for (const [i, lag] of [10, 20, 30, 40].entries()) {
      const r = evaluateEpisodes(
        state,
        seen({ now: at(i), end: 100 + lag, checkpointBefore: 0, checkpointAfter: 100 }),
        thresholds,
      );
      state = r.state;
      alerts.push(...r.alerts);
    }
    expect(alerts).toEqual([
      expect.objectContaining({ kind: 'backlog', state: 'open', detail: 'lag grew over 3 runs to 40' }),
    ]);
    const drained = evaluateEpisodes(
      state,
      seen({ now: at(9), end: 140, checkpointBefore: 100, checkpointAfter: 140 }),
      thresholds,
    );
    expect(drained.alerts).toEqual([expect.objectContaining({ kind: 'backlog', state: 'resolved' })]);
  });
});
