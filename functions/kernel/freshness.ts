/**
 * How fresh the tables are, in time: `freshnessSeconds`, the age of the oldest record not yet durable in
 * BigQuery (0 when nothing waits), and `latencyMs`, how long the records committed took from their Kafka
 * timestamp to their commit. Both count from Kafka's timestamp (the producer's CreateTime, or the
 * broker's LogAppendTime where the topic says so); an age below 0 (a producer's clock ahead) counts as 0.
 */

/** The latency of a run's (or a partition's) committed records: null figures when none was committed. */
export interface LatencyFigures {
  count: number;
  p50: number | null;
  p99: number | null;
  max: number | null;
}

/** Whole seconds from `timestamp` to `now`, never below 0. */
export function ageSeconds(now: number, timestamp: number): number {
  return Math.max(0, Math.floor((now - timestamp) / 1000));
}

/** Relative accuracy of the sketch's quantiles: within 0.5% of a value the records really had. */
const accuracy = 0.005;
const gamma = (1 + accuracy) / (1 - accuracy);
const logGamma = Math.log(gamma);

/**
 * Latencies in a bounded log-bucketed histogram (as DDSketch): a run of millions of records keeps a few
 * hundred counters, two sketches merge exactly, and a quantile is within 0.5% of a latency some record
 * really had. Count and max are exact. Latencies below 1 ms count as 0.
 */
export class LatencySketch {
  readonly #buckets = new Map<number, number>();
  #zeros = 0;
  #count = 0;
  #max = 0;

  get count(): number {
    return this.#count;
  }

  add(latencyMs: number): void {
    this.#count++;
    if (latencyMs > this.#max) this.#max = latencyMs;
    if (!(latencyMs >= 1)) {
      this.#zeros++;
      return;
    }
    const index = Math.ceil(Math.log(latencyMs) / logGamma);
    this.#buckets.set(index, (this.#buckets.get(index) ?? 0) + 1);
  }

  /** Every record `other` counted, counted here too. */
  merge(other: LatencySketch): void {
    this.#count += other.#count;
    this.#zeros += other.#zeros;
    if (other.#max > this.#max) this.#max = other.#max;
    for (const [index, n] of other.#buckets) this.#buckets.set(index, (this.#buckets.get(index) ?? 0) + n);
  }

  /** The latency at quantile `q` (0 < q ≤ 1) by nearest rank, in whole milliseconds; null when empty. */
  quantile(q: number): number | null {
    if (this.#count === 0) return null;
    const rank = Math.max(1, Math.ceil(q * this.#count));
    if (rank <= this.#zeros) return 0;
    let seen = this.#zeros;
    for (const index of [...this.#buckets.keys()].sort((a, b) => a - b)) {
      seen += this.#buckets.get(index)!;
      if (seen >= rank) {
        // The bucket (γ^(i-1), γ^i] answers with the value of least relative error, never past the max.
        const value = (2 * gamma ** index) / (gamma + 1);
        return Math.round(Math.min(value, this.#max));
      }
    }
    return Math.round(this.#max);
  }

  figures(): LatencyFigures {
    return {
      count: this.#count,
      p50: this.quantile(0.5),
      p99: this.quantile(0.99),
      max: this.#count === 0 ? null : Math.round(this.#max),
    };
  }
}

/** The worst of some freshness figures (unknown ones left out); null when none is known. */
export function worstFreshness(figures: Iterable<number | null | undefined>): number | null {
  let worst: number | null = null;
  for (const f of figures) if (f != null && (worst === null || f > worst)) worst = f;
  return worst;
}
