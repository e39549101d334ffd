import { describe, expect, test } from 'vitest';
import { ageSeconds, LatencySketch, worstFreshness } from '../../functions/kernel/freshness.js';

/** The exact nearest-rank quantile of `values`. */
function exactQuantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(1, Math.ceil(q * sorted.length)) - 1]!;
}

describe('ageSeconds', () => {
  test('whole seconds, and a timestamp in the future (a producer clock ahead) counts as 0', () => {
    expect(ageSeconds(10_000, 0)).toBe(10);
    expect(ageSeconds(10_999, 0)).toBe(10);
    expect(ageSeconds(0, 5_000)).toBe(0);
  });
});

describe('LatencySketch', () => {
  test('empty: count 0, no figures', () => {
    expect(new LatencySketch().figures()).toEqual({ count: 0, p50: null, p99: null, max: null });
  });

  test('one latency: every quantile is it, within 0.5%', () => {
    const sketch = new LatencySketch();
    sketch.add(3_600_000);
    const f = sketch.figures();
    expect(f.count).toBe(1);
    expect(f.max).toBe(3_600_000);
    expect(Math.abs(f.p50! - 3_600_000) / 3_600_000).toBeLessThanOrEqual(0.005);
    expect(f.p99).toBe(f.p50);
  });

  test('quantiles within 0.5% of the exact nearest-rank ones over wide random spreads; count and max exact', () => {
    let seed = 7;
    const random = () => {
      seed = (seed * 48271) % 2147483647;
      return seed / 2147483647;
    };
    for (const spread of [10, 10_000, 1e9]) {
      const values = Array.from({ length: 5_000 }, () => Math.floor(random() * spread));
      const sketch = new LatencySketch();
      for (const v of values) sketch.add(v);
      for (const q of [0.01, 0.5, 0.9, 0.99, 1]) {
        const exact = exactQuantile(values, q);
        const got = sketch.quantile(q)!;
        // Rounded to whole ms: small latencies may differ by the rounding.
        expect(Math.abs(got - exact)).toBeLessThanOrEqual(Math.max(1, exact * 0.005));
      }
      expect(sketch.figures().count).toBe(5_000);
      expect(sketch.figures().max).toBe(Math.max(...values));
    }
  });

  test('negative and sub-millisecond latencies count as 0', () => {
    const sketch = new LatencySketch();
    for (const v of [-5_000, -1, 0, 0.4, 100]) sketch.add(v);
    expect(sketch.quantile(0.5)).toBe(0);
    expect(sketch.quantile(0.6)).toBe(0);
    expect(sketch.quantile(1)).toBe(100);
    expect(sketch.figures().max).toBe(100);
  });

  test('two sketches merged answer as one sketch of all their latencies', () => {
    const a = new LatencySketch();
    const b = new LatencySketch();
    const all = new LatencySketch();
    for (let i = 0; i < 1_000; i++) {
      (i % 3 === 0 ? a : b).add(i * 37);
      all.add(i * 37);
    }
    a.merge(b);
    expect(a.figures()).toEqual(all.figures());
  });
});

describe('worstFreshness', () => {
  test('the largest known figure; unknown ones left out; null when none is known', () => {
    expect(worstFreshness([0, 3_600, null, 12])).toBe(3_600);
    expect(worstFreshness([null, undefined])).toBeNull();
    expect(worstFreshness([])).toBeNull();
    expect(worstFreshness([0, 0])).toBe(0);
  });
});
