/**
 * `merge` (exactly once): the batches of the partitions ready at once staged and MERGEd into the target by
 * origin in one statement, the dead letters into the error table the same way, before the commit.
 */
import { targetTableSchema } from '../../schema/table-schema.js';
import type { ErrorTable } from '../../sinks/contracts.js';
import { fanOutWriters } from '../fan-out.js';
import { createMergeWriter } from '../sink-writer.js';
import { prepareTargetTable, stagingOf } from '../target-table.js';
import { lazyPort, type MadeSinks, type WriteModeDefinition } from '../write-mode.js';
import { createMergeErrorTable } from './merge-error-table.js';
import { createMergeSink } from './merge-sink.js';

interface MergeSinks extends MadeSinks {
  readonly errorTable: ErrorTable;
}

export const mergeMode: WriteModeDefinition<MergeSinks> = {
  // A flush is one MERGE for every partition ready at once: many may be in flight.
  partitionConcurrency: 256,
  transforms: true,
  verifies: { errorTable: true, changes: false },
  seekBackNote: (to, from) =>
    `records [${to}, ${from}) will be read again; merge mode inserts none of them twice`,
  async makeSinks(options) {
    const { route, userSchema, config } = options;
    const schema = targetTableSchema(userSchema, route.metadata);
    await prepareTargetTable(options, schema);
    const staging = stagingOf(options);
    const merge = createMergeSink({ ...staging, table: route.table, schema });
    await merge.cleanLeftovers();
    const errorTable = createMergeErrorTable({
      ...staging,
      table: route.table,
      location: config.bigquery.location,
    });
    return {
      sink: merge,
      errorTable,
      close: async () => {
        await errorTable.close();
        await merge.close();
      },
    };
  },
  createWriter(made, options, tracked) {
    const sink = lazyPort(async () => (await made()).sink, ['write']);
    const errorTable = lazyPort(async () => (await made()).errorTable, ['write']);
    return createMergeWriter({ ...options, sink: tracked(sink), errorTable: tracked(errorTable) });
  },
  fanOut(members, router, tracked) {
    return fanOutWriters(
      members.map((m) => mergeMode.createWriter(m.made, m.options, tracked)),
      router,
    );
  },
};
