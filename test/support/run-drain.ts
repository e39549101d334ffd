/**
 * The drain with in-memory ports, wired as the job wires it: the write mode's writer (writers/) made from
 * the sinks given (`streams`: storage-write; `errorTable`: merge; otherwise insert-all), so that the unit
 * tests of the drain run every mode's real writer.
 */

import { runDrain as drain } from '../../functions/drain/run.js';
import type { DrainContext, DrainOptions as RunOptions } from '../../functions/drain/run-state.js';
import type { Alerts, Checkpoints, DeadLetters, Sink, Source, Writer } from '../../functions/kernel/ports.js';
import type { RunSummary } from '../../functions/kernel/summary.js';
import type { WriterOptions } from '../../functions/modes/route-sinks.js';
import { createInsertAllWriter, createMergeWriter } from '../../functions/modes/sink-writer.js';
import { createStorageWriteWriter } from '../../functions/modes/storage-write/storage-write-writer.js';
import type { RecordPolicy } from '../../functions/records/classify.js';
import type { ErrorTable, StreamSink } from '../../functions/sinks/contracts.js';

export type DrainOptions = RunOptions &
  Pick<RecordPolicy, 'tombstones'> & { readonly rowShape?: RecordPolicy['shape'] };

export interface TestPorts {
  readonly source: Source;
  readonly checkpoints: Checkpoints;
  readonly sink?: Sink;
  readonly streams?: StreamSink;
  readonly errorTable?: ErrorTable;
  readonly deadLetters: DeadLetters;
  readonly alerts?: Alerts;
  readonly rules?: RecordPolicy['rules'];
  /** Any other mode's writer (load), made from the options every writer gets. */
  readonly writer?: (options: WriterOptions) => Writer;
}

/** The writer of the mode whose sinks the test gives: streams (storage-write), an error table (merge), or a sink. */
export function writerOf(ports: TestPorts, options: WriterOptions): Writer {
  if (ports.writer !== undefined) return ports.writer(options);
  if (ports.streams !== undefined)
    return createStorageWriteWriter({
      ...options,
      targets: [{ streams: ports.streams, records: options.records }],
    });
  if (ports.errorTable !== undefined)
    return createMergeWriter({ ...options, sink: ports.sink!, errorTable: ports.errorTable });
  return createInsertAllWriter({ ...options, sink: ports.sink! });
}

export function runDrain(
  ports: TestPorts,
  options: DrainOptions,
  context: DrainContext,
): Promise<RunSummary> {
  const writer = writerOf(ports, {
    checkpoints: ports.checkpoints,
    deadLetters: ports.deadLetters,
    records: {
      tombstones: options.tombstones,
      ...(options.rowShape === undefined ? {} : { shape: options.rowShape }),
      ...(ports.rules === undefined ? {} : { rules: ports.rules }),
    },
    leaseTtlMs: options.leaseTtlMs,
    flushMaxBytes: options.batchMaxBytes * 4,
    logger: context.logger,
    now: context.now,
    cdc: null,
  });
  return drain(
    {
      source: ports.source,
      checkpoints: ports.checkpoints,
      writer,
      ...(ports.alerts ? { alerts: ports.alerts } : {}),
    },
    options,
    context,
  );
}
