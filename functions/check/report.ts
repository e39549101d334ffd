/** What `check` reports: each check with what to do about a failure, and the dry run's counts. */
import type { DeadLetterKind } from '../kernel/records.js';

export interface CheckResult {
  readonly name: string;
  readonly ok: boolean;
  /** What was found; for a failure, what is wrong and what to do about it. */
  readonly detail: string;
}

export interface DryRunCounts {
  /** Records read (at most N a partition, from where the next run would start). */
  records: number;
  rows: number;
  deadLetters: Partial<Record<DeadLetterKind, number>>;
  /** One reason a kind, as its first dead letter gave it. */
  samples: Partial<Record<DeadLetterKind, string>>;
  tombstones: number;
  /** Records the route's transform drops. */
  filtered: number;
}

export interface CheckReport {
  readonly ok: boolean;
  readonly checks: readonly CheckResult[];
  readonly dryRun: DryRunCounts;
}

export function emptyDryRun(): DryRunCounts {
  return { records: 0, rows: 0, deadLetters: {}, samples: {}, tombstones: 0, filtered: 0 };
}

/** Collects the checks in order; `run` turns a throw into a failed check with its message. */
export function checkList() {
  const checks: CheckResult[] = [];
  return {
    checks,
    pass(name: string, detail: string) {
      checks.push({ name, ok: true, detail });
    },
    fail(name: string, detail: string) {
      checks.push({ name, ok: false, detail });
    },
    /** Runs a check; a throw fails it with `advice` after the error's message. */
    async run(name: string, advice: string, check: () => Promise<string>): Promise<boolean> {
      try {
        checks.push({ name, ok: true, detail: await check() });
        return true;
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        checks.push({ name, ok: false, detail: `${message}: ${advice}` });
        return false;
      }
    },
  };
}
