import type { ErrorTable, Sink, StreamSink, Writer } from '../drain/types.js';
import { createInsertAllWriter, createMergeWriter, type SinkWriterOptions } from './sink-writer.js';
import { createStorageWriteWriter, type StorageWriteWriterOptions } from './storage-write.js';

export type WriteMode = 'insert-all' | 'merge' | 'storage-write';

/** What each write mode writes through, besides what every writer gets. */
export type WriterPorts =
  | { readonly mode: 'insert-all'; readonly sink: Sink }
  | { readonly mode: 'merge'; readonly sink: Sink; readonly errorTable: ErrorTable }
  | { readonly mode: 'storage-write'; readonly streams: StreamSink };

export type CommonWriterOptions = Omit<SinkWriterOptions, 'sink'> &
  Omit<StorageWriteWriterOptions, 'streams'>;

/** The writer of a route's write mode. */
export function createWriter(ports: WriterPorts, options: CommonWriterOptions): Writer {
  switch (ports.mode) {
    case 'insert-all':
      return createInsertAllWriter({ ...options, sink: ports.sink });
    case 'merge':
      return createMergeWriter({ ...options, sink: ports.sink, errorTable: ports.errorTable });
    case 'storage-write':
      return createStorageWriteWriter({ ...options, streams: ports.streams });
  }
}
