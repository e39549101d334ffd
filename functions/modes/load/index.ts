/**
 * `load` (exactly once, free ingestion): what a task's run reads of a table loaded into the target by one
 * load job, streamed as it is read (load-stream.ts), its id recorded as the partitions' intent before it
 * is completed; a range whose load failed read again flush by flush (load-flushes.ts); dead letters
 * into the error table by MERGE (idempotent by origin). Load jobs a table may take a day are counted.
 * Routes sharing a topic by `when`: a job a table, one intent naming them all (load-targets.ts).
 */
import { ConfigError } from '../../kernel/errors.js';
import type { PartitionRef } from '../../kernel/records.js';
import { targetTableSchema } from '../../schema/table-schema.js';
import type { ErrorTable, HeldOffsets } from '../../sinks/contracts.js';
import { heldOffsets } from '../../sinks/table-stats.js';
import { createMergeErrorTable } from '../merge/merge-error-table.js';
import { createMergeSink } from '../merge/merge-sink.js';
import { prepareTargetTable, stagingOf } from '../target-table.js';
import { lazyPort, type MadeSinks, type WriteModeDefinition, type WriterOptions } from '../write-mode.js';
import { createLoadJobs, type LoadJobs, type LoadNaming, loadNaming } from './load-jobs.js';
import { createLoadQuota, type LoadQuota } from './load-quota.js';
import type { LoadTarget } from './load-targets.js';
import { createLoadWriter } from './load-writer.js';

interface LoadSinks extends MadeSinks {
  readonly jobs: LoadJobs;
  readonly quota: LoadQuota;
  readonly errorTable: ErrorTable;
  naming(): LoadNaming;
  heldOffsets(partition: PartitionRef, from: number, to: number): Promise<HeldOffsets>;
}

export const loadMode: WriteModeDefinition<LoadSinks> = {
  // A flush is one load job for every partition ready at once: many may be in flight.
  partitionConcurrency: 256,
  // The run's load takes batches one after another (one upload): reading further ahead only holds records
  // (a million small records: peak RSS 266 MB against 275 with four, the same time).
  batchesInFlight: 2,
  transforms: true,
  verifies: { errorTable: true, changes: false },
  seekBackNote: (to, from) =>
    `records [${to}, ${from}) will be read again; those the tables still hold are not loaded again`,
  async makeSinks(options) {
    const { route, userSchema, config, clients } = options;
    const load = config.bigquery.load;
    if (load === null) throw new ConfigError('BQ_WRITE_MODE', 'load mode without its settings');
    const schema = targetTableSchema(userSchema, route.metadata);
    await prepareTargetTable(options, schema);
    const staging = stagingOf(options);
    const errorTable = createMergeErrorTable({
      ...staging,
      table: route.table,
      location: config.bigquery.location,
    });
    const quota = createLoadQuota({
      firestore: clients.firestore,
      pipelineId: config.pipelineId,
      dataset: route.dataset,
      table: route.table,
      perDay: load.jobsPerTablePerDay,
      burst: load.loadsPerRun,
      now: Date.now,
    });
    const jobs = createLoadJobs({
      bigquery: clients.bigquery,
      project: config.project,
      dataset: route.dataset,
      table: route.table,
      location: config.bigquery.location,
    });
    // The dead-letter replay writes through the merge sink (idempotent by origin), as in storage-write mode.
    const merge = createMergeSink({ ...staging, table: route.table, schema });
    return {
      sink: merge,
      jobs,
      quota,
      errorTable,
      naming: () => loadNaming(config.pipelineId, route.dataset, route.table),
      heldOffsets: (partition, from, to) =>
        heldOffsets(clients.bigquery, { dataset: route.dataset, table: route.table }, partition, from, to),
      close: async () => {
        await errorTable.close();
        await merge.close();
      },
    };
  },
  createWriter(made, options, tracked) {
    // One load a table for what a task's run reads of it (issue #67).
    return createLoadWriter({ ...options, streamed: true, targets: [targetOf(made, options, tracked)] });
  },
  fanOut(members, router, tracked) {
    const targets = members.map((m) => targetOf(m.made, m.options, tracked));
    return createLoadWriter({ ...members[0]!.options, streamed: true, targets, router });
  },
};

/** A route's table as the load writer sees it, each call waiting for its sinks to be made. */
function targetOf(
  made: () => Promise<LoadSinks>,
  options: WriterOptions,
  tracked: <T extends object>(port: T) => T,
): LoadTarget {
  const jobs = lazyPort(async () => (await made()).jobs, ['submit', 'state', 'open']);
  const quota = lazyPort(async () => (await made()).quota, ['take']);
  const errorTable = lazyPort(async () => (await made()).errorTable, ['write']);
  const naming = lazyPort(made, ['naming', 'heldOffsets']) as unknown as {
    naming(): Promise<LoadNaming>;
    heldOffsets: LoadSinks['heldOffsets'];
  };
  return {
    jobs: tracked(jobs),
    quota: tracked(quota),
    errorTable: tracked(errorTable),
    records: options.records,
    naming: naming.naming,
    heldOffsets: tracked(naming).heldOffsets,
  };
}
