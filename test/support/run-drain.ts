/**
 * The drain with in-memory ports, wired as the job wires it: the write mode's writer (writers/) made from
 * the sinks given (`streams`: storage-write; `errorTable`: merge; otherwise insert-all), so that the unit
 * tests of the drain run every mode's real writer.
 */

import { runDrain as drain } from '../../functions/drain/run.js';
import type { DrainContext, DrainOptions as RunOptions } from '../../functions/drain/run-state.js';
import type { Alerts, Checkpoints, DeadLetters, Sink, Source } from '../../functions/kernel/ports.js';
import type { RunSummary } from '../../functions/kernel/summary.js';
import type { RecordPolicy } from '../../functions/records/classify.js';
import type { ErrorTable, StreamSink } from '../../functions/sinks/contracts.js';
import { createWriter, type WriterPorts } from '../../functions/writers/create-writer.js';

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
}

export function writerPortsOf(ports: TestPorts): WriterPorts {
  if (ports.streams !== undefined) return { mode: 'storage-write', streams: ports.streams };
  if (ports.errorTable !== undefined)
    return { mode: 'merge', sink: ports.sink!, errorTable: ports.errorTable };
  return { mode: 'insert-all', sink: ports.sink! };
}

export function runDrain(
  ports: TestPorts,
  options: DrainOptions,
  context: DrainContext,
): Promise<RunSummary> {
  const writer = createWriter(writerPortsOf(ports), {
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
