/**
 * The order test files start in: the slowest known files first, so that the workers running files side by
 * side finish together instead of one starting a long file when the others are done. Vitest orders by the
 * durations of a machine's earlier runs where it has them, and otherwise by file size (a fresh clone: the
 * crash matrix's small files would start last). The list below is by measured time, slowest first
 * (`node scripts/suite-times.mjs` prints each run's slowest); files not named keep vitest's order, after.
 */
import { BaseSequencer, type TestSpecification } from 'vitest/node';

export const slowestFirst = [
  'test/e2e/service-faults.test.ts',
  'test/e2e/crash-matrix-load.test.ts',
  'test/e2e/route-when.test.ts',
  'test/e2e/crash-matrix-merge.test.ts',
  'test/e2e/dispatch.test.ts',
  'test/e2e/crash-matrix-cdc.test.ts',
  'test/e2e/crash-matrix-storage-write.test.ts',
  'test/e2e/formats.test.ts',
  'test/e2e/merge-scale.test.ts',
  'test/e2e/thousand-partitions.test.ts',
  'test/e2e/real-producers.test.ts',
  'test/e2e/crash-matrix-insert-all.test.ts',
  'test/e2e/permissions.test.ts',
  'test/e2e/gap-alerts.test.ts',
  'test/e2e/operator-controls.test.ts',
  'test/e2e/cdc.test.ts',
  'test/e2e/restart-safety.test.ts',
  'test/e2e/replay-verify.test.ts',
  'test/e2e/managed-kafka-oauth.test.ts',
  'test/e2e/schema-evolution.test.ts',
  'test/e2e/run-contract.test.ts',
  'test/e2e/debezium.test.ts',
  'test/e2e/routes.test.ts',
];

function rank(file: TestSpecification): number {
  const at = slowestFirst.findIndex((name) => file.moduleId.endsWith(`/${name}`));
  return at < 0 ? slowestFirst.length : at;
}

export class SlowestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const position = new Map(sorted.map((file, i) => [file, i]));
    // Projects keep their order (groupOrder, then vitest's); within one, the known slow files go first.
    return [...sorted].sort((a, b) => {
      if (a.project !== b.project) return position.get(a)! - position.get(b)!;
      return rank(a) - rank(b) || position.get(a)! - position.get(b)!;
    });
  }
}
