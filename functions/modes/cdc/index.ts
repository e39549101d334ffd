/**
 * `cdc` (exactly once in effect): changes upserted and deleted by primary key through the default stream,
 * sequenced by offset; BigQuery keeps each key's latest. The table is made (with its primary key, clustered
 * by it, with its max staleness) or checked once the key is known: at the first batch, since Debezium's
 * key may come from the records themselves; then its columns follow the schema file as in every mode.
 */
import { ConfigError } from '../../kernel/errors.js';
import type { Sink } from '../../kernel/ports.js';
import { targetTableSchema } from '../../schema/table-schema.js';
import { evolveTarget, targetOf } from '../target-table.js';
import { lazyPort, type MadeSinks, type RouteSinksOptions, type WriteModeDefinition } from '../write-mode.js';
import { checkPartitionCounts } from './cdc-partitions.js';
import { type ChangeSink, cdcSourceFields, createCdcSink, ensureCdcTable } from './cdc-sink.js';
import { createCdcWriter } from './cdc-writer.js';

interface CdcSinks extends MadeSinks {
  readonly changes: ChangeSink;
  /** Makes (or checks) the table for a primary key, once it is known; idempotent. */
  readonly ready: (primaryKey: readonly string[]) => Promise<void>;
}

export const cdcMode: WriteModeDefinition<CdcSinks> = {
  partitionConcurrency: 256,
  // Changes are written as they come (Debezium's envelopes, upserts): no transform in between.
  transforms: false,
  verifies: { errorTable: true, changes: true },
  seekBackNote: (to, from) =>
    `records [${to}, ${from}) will be read again; a replayed change never undoes a later one (sequence numbers)`,
  beforeRun: ({ kafka, clients, logger, config, topics, readOnly }) =>
    checkPartitionCounts(
      { kafka, firestore: clients.firestore, logger },
      config.pipelineId,
      topics,
      readOnly,
    ),
  makeSinks: async (options) => cdcSinks(options),
  createWriter(made, options, tracked) {
    const cdc = options.cdc!;
    const { records } = options;
    const changes: ChangeSink = {
      ...lazyPort(async () => (await made()).changes, ['apply', 'startEncoding']),
      close: () => {},
    };
    return createCdcWriter({
      changes: tracked(changes),
      ready: async (primaryKey) => (await made()).ready(primaryKey),
      deadLetters: options.deadLetters,
      now: options.now,
      logger: options.logger,
      policy: {
        format: cdc.changeFormat,
        primaryKey: cdc.primaryKey,
        sourceColumns: cdc.sourceColumns,
        ...(records.shape === undefined ? {} : { shape: records.shape }),
        ...(records.rules === undefined ? {} : { rules: records.rules }),
        ...(records.format === undefined ? {} : { valueFormat: records.format }),
      },
    });
  },
};

function cdcSinks(options: RouteSinksOptions): CdcSinks {
  const { config, route, clients, userSchema, logger } = options;
  const cdc = config.bigquery.cdc!;
  const target = targetOf(options);
  const fields = targetTableSchema(
    [...userSchema, ...(cdc.sourceColumns ? cdcSourceFields : [])],
    route.metadata,
  );
  const changes = createCdcSink({
    bigquery: clients.bigquery,
    writer: clients.bigqueryWriter,
    project: config.project,
    ...target,
    schema: fields,
    maxStaleness: cdc.maxStaleness,
    logger,
  });
  let made: { key: string; done: Promise<void> } | undefined;
  const ready = (primaryKey: readonly string[]) => {
    const key = primaryKey.join(',');
    if (made?.key !== key) {
      const done = (async () => {
        const missing = primaryKey.filter((k) => !fields.some((f) => f.name === k));
        if (userSchema.length > 0 && missing.length > 0)
          throw new ConfigError(
            'BQ_PRIMARY_KEY',
            `names ${missing.join(', ')}, which the table's schema has not`,
          );
        await ensureCdcTable(clients.bigquery, target, route.table, fields, {
          primaryKey,
          maxStaleness: cdc.maxStaleness,
        });
        await evolveTarget(options, fields);
      })();
      done.catch(() => {
        if (made?.done === done) made = undefined;
      });
      made = { key, done };
    }
    return made.done;
  };
  const unsupported: Sink = {
    write: async () => {
      throw new ConfigError('BQ_WRITE_MODE', 'replaying dead letters is not supported in cdc mode yet');
    },
  };
  return { sink: unsupported, changes, ready, close: async () => changes.close() };
}
