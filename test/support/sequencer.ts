/**
 * The order test files start in: longest first, unit, integration and end-to-end files in one pool, so that
 * the short files fill the gaps the long ones leave and the workers finish together (longest processing
 * time first). Vitest orders by the durations of a machine's earlier runs where it has them, and otherwise
 * by file size (a fresh clone: the crash matrix's small files would start last). The estimates below are
 * one `.ci/run`'s times in seconds (three workers in one pool), side by side in the suite (`node scripts/suite-times.mjs` prints each
 * run's; refresh them when a file grows); a file not named is estimated by its project.
 */
import { BaseSequencer, type TestSpecification } from 'vitest/node';

export const measuredSeconds = new Map<string, number>([
  ['test/e2e/service-faults.test.ts', 401],
  ['test/e2e/route-when.test.ts', 217],
  ['test/e2e/crash-matrix-load.test.ts', 166],
  ['test/e2e/formats.test.ts', 150],
  ['test/e2e/crash-matrix-merge.test.ts', 136],
  ['test/e2e/crash-matrix-storage-write.test.ts', 131],
  ['test/e2e/crash-matrix-cdc.test.ts', 130],
  ['test/e2e/dispatch.test.ts', 120],
  ['test/e2e/thousand-partitions.test.ts', 110],
  ['test/e2e/gap-alerts.test.ts', 109],
  ['test/e2e/real-producers.test.ts', 107],
  ['test/integration/ledger-rollup.test.ts', 104],
  ['test/e2e/merge-scale.test.ts', 102],
  ['test/e2e/permissions.test.ts', 87],
  ['test/e2e/restart-safety.test.ts', 77],
  ['test/e2e/operator-controls.test.ts', 74],
  ['test/e2e/replay-headers.test.ts', 59],
  ['test/e2e/crash-matrix-insert-all.test.ts', 55],
  ['test/e2e/managed-kafka-oauth.test.ts', 54],
  ['test/e2e/replay-verify.test.ts', 53],
  ['test/e2e/schema-evolution.test.ts', 49],
  ['test/e2e/freshness.test.ts', 39],
  ['test/e2e/run-contract.test.ts', 39],
  ['test/e2e/debezium.test.ts', 37],
  ['test/e2e/follow-log.test.ts', 37],
  ['test/e2e/routes.test.ts', 37],
  ['test/e2e/cdc.test.ts', 32],
  ['test/unit/load-mode.test.ts', 30],
  ['test/e2e/job-bundle.test.ts', 29],
  ['test/e2e/refused-rows.test.ts', 28],
  ['test/e2e/shared-work.test.ts', 26],
  ['test/e2e/check.test.ts', 25],
  ['test/e2e/transforms.test.ts', 23],
  ['test/integration/load-upload-emulator.test.ts', 20],
  ['test/e2e/unknown-fields-evolve.test.ts', 15],
  ['test/integration/dispatch-function.test.ts', 13],
  ['test/e2e/metadata-columns.test.ts', 13],
  ['test/e2e/connection-recipes.test.ts', 12],
  ['test/e2e/error-table-upgrade.test.ts', 12],
  ['test/e2e/fuzz.test.ts', 12],
  ['test/e2e/load-mode.test.ts', 12],
  ['test/e2e/bad-input.test.ts', 11],
  ['test/e2e/kafka-security.test.ts', 11],
  ['test/e2e/secret-references.test.ts', 11],
  ['test/integration/merge-sink.test.ts', 10],
  ['test/integration/oauth-broker.test.ts', 10],
  ['test/unit/protobuf-rows.test.ts', 9],
  ['test/integration/bigquery-client-answers.test.ts', 9],
  ['test/e2e/big-records.test.ts', 9],
  ['test/e2e/seek-freshness.test.ts', 9],
  ['test/integration/cdc-emulator.test.ts', 8],
  ['test/integration/row-errors-emulator.test.ts', 8],
  ['test/integration/storage-write-sink.test.ts', 8],
]);

/** A file the list does not name: a guess by its project. */
const byProject: Record<string, number> = { unit: 2, integration: 5, e2e: 15 };

/** The file's estimated seconds. */
export function estimate(file: TestSpecification): number {
  for (const [name, seconds] of measuredSeconds) if (file.moduleId.endsWith(`/${name}`)) return seconds;
  return byProject[file.project.name] ?? 5;
}

export class SlowestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const position = new Map(sorted.map((file, i) => [file, i]));
    // Groups keep their order (groupOrder); within one, the longest first.
    return [...sorted].sort((a, b) => {
      const group = a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder;
      return group || estimate(b) - estimate(a) || position.get(a)! - position.get(b)!;
    });
  }
}
