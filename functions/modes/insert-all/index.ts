/**
 * `insert-all` (at least once): each batch through the streaming insert API on its own, its row errors
 * dead letters. A checkpoint sent back writes again what the table holds.
 */
import { defaultRetryPolicy } from '../../kernel/retry.js';
import { targetTableSchema } from '../../schema/table-schema.js';
import { createInsertAllSink, insertAllLimits } from '../../sinks/insert-all-sink.js';
import { fanOutWriters } from '../fan-out.js';
import { createInsertAllWriter } from '../sink-writer.js';
import { prepareTargetTable } from '../target-table.js';
import { lazyPort, type WriteModeDefinition } from '../write-mode.js';

export const insertAllMode: WriteModeDefinition = {
  // Each batch is written on its own: few at once.
  partitionConcurrency: 8,
  // The error table is not this mode's to write: dead letters are on Pub/Sub only.
  transforms: true,
  verifies: { errorTable: false, changes: false },
  seekBackNote: (to, from) =>
    `records [${to}, ${from}) will be read again; in insert-all mode those already in the table will be there twice`,
  async makeSinks(options) {
    const { route, userSchema, logger } = options;
    const table = await prepareTargetTable(options, targetTableSchema(userSchema, route.metadata));
    const sink = createInsertAllSink(table, { ...insertAllLimits, retry: defaultRetryPolicy, logger });
    return { sink, close: async () => {} };
  },
  createWriter(made, options, tracked) {
    const sink = lazyPort(async () => (await made()).sink, ['write']);
    return createInsertAllWriter({ ...options, sink: tracked(sink) });
  },
  fanOut(members, router, tracked) {
    return fanOutWriters(
      members.map((m) => insertAllMode.createWriter(m.made, m.options, tracked)),
      router,
    );
  },
};
