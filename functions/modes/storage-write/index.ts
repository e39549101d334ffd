/**
 * `storage-write` (the default, exactly once): a flush's rows and dead letters in PENDING streams, its
 * intent recorded before they commit. The dead-letter replay writes through MERGE (idempotent by origin).
 */
import type { Sink } from '../../kernel/ports.js';
import { targetTableSchema } from '../../schema/table-schema.js';
import type { StreamSink } from '../../sinks/contracts.js';
import { createMergeSink } from '../merge/merge-sink.js';
import { prepareTargetTable, stagingOf } from '../target-table.js';
import { lazyPort, type MadeSinks, type WriteModeDefinition, type WriterOptions } from '../write-mode.js';
import { createStorageWriteSink } from './storage-write-sink.js';
import { createStorageWriteWriter, type StreamTarget } from './storage-write-writer.js';

interface StorageWriteSinks extends MadeSinks {
  readonly sink: Sink;
  readonly streams: StreamSink;
}

const streamSinkMethods = [
  'startEncoding',
  'warmUp',
  'prepare',
  'commit',
  'streamState',
  'heldInRange',
  'heldOffsets',
] as const satisfies readonly (keyof StreamSink)[];

function targetOf(
  made: () => Promise<StorageWriteSinks>,
  options: WriterOptions,
  tracked: <T extends object>(port: T) => T,
): StreamTarget {
  const streams = lazyPort(async () => (await made()).streams, streamSinkMethods);
  return { streams: tracked(streams), records: options.records };
}

export const storageWriteMode: WriteModeDefinition<StorageWriteSinks> = {
  // A flush writes the batches of every partition ready at once: many may be in flight.
  partitionConcurrency: 256,
  transforms: true,
  verifies: { errorTable: true, changes: false },
  seekBackNote: (to, from) =>
    `records [${to}, ${from}) will be read again; those the tables still hold are not written again`,
  async makeSinks(options) {
    const { clients, config, route, userSchema, logger } = options;
    const schema = targetTableSchema(userSchema, route.metadata);
    const streams = createStorageWriteSink({
      bigquery: clients.bigquery,
      writer: clients.bigqueryWriter,
      project: config.project,
      dataset: route.dataset,
      table: route.table,
      location: config.bigquery.location,
      schema,
      logger,
    });
    await prepareTargetTable(options, schema);
    const merge = createMergeSink({ ...stagingOf(options), table: route.table, schema });
    await merge.cleanLeftovers();
    return {
      sink: merge,
      streams,
      close: async () => {
        streams.close();
        await merge.close();
      },
    };
  },
  createWriter(made, options, tracked) {
    return createStorageWriteWriter({ ...options, targets: [targetOf(made, options, tracked)] });
  },
  // One flush for the group's tables: its intent names the streams of every table it feeds.
  fanOut(members, router, tracked) {
    const targets = members.map((m) => targetOf(m.made, m.options, tracked));
    return createStorageWriteWriter({ ...members[0]!.options, targets, router });
  },
};
