import type { CdcConfig } from '../config/config.js';
import type { Sink, Writer } from '../kernel/ports.js';
import type { ErrorTable, StreamSink } from '../sinks/contracts.js';
import { type ChangePorts, createCdcWriter } from './cdc.js';
import { createInsertAllWriter, createMergeWriter, type SinkWriterOptions } from './sink-writer.js';
import { createStorageWriteWriter, type StorageWriteWriterOptions } from './storage-write.js';

export type WriteMode = 'insert-all' | 'merge' | 'storage-write' | 'cdc';

/** What each write mode writes through, besides what every writer gets. */
export type WriterPorts =
  | { readonly mode: 'insert-all'; readonly sink: Sink }
  | { readonly mode: 'merge'; readonly sink: Sink; readonly errorTable: ErrorTable }
  | { readonly mode: 'storage-write'; readonly streams: StreamSink }
  | ({ readonly mode: 'cdc' } & ChangePorts);

export type CommonWriterOptions = Omit<SinkWriterOptions, 'sink'> &
  Omit<StorageWriteWriterOptions, 'streams'> & { readonly cdc?: CdcConfig | null };

/** The writer of a route's write mode. */
export function createWriter(ports: WriterPorts, options: CommonWriterOptions): Writer {
  switch (ports.mode) {
    case 'insert-all':
      return createInsertAllWriter({ ...options, sink: ports.sink });
    case 'merge':
      return createMergeWriter({ ...options, sink: ports.sink, errorTable: ports.errorTable });
    case 'storage-write':
      return createStorageWriteWriter({ ...options, streams: ports.streams });
    case 'cdc': {
      const cdc = options.cdc!;
      const { records } = options;
      return createCdcWriter({
        changes: ports.changes,
        ready: ports.ready,
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
    }
  }
}
