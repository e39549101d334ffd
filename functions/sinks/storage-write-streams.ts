/**
 * The Storage Write API as the modes that write through it meet it (storage-write's PENDING streams, cdc's
 * `_default` stream): a table's message format compiled once, and a connection whose errors are heard.
 */
import type { BigQuery } from '@google-cloud/bigquery';
import { adapt, managedwriter } from '@google-cloud/bigquery-storage';
import { compileRowEncoder, type RowEncoder } from '../encoders/row-encoder.js';
import type { Logger } from '../kernel/logger.js';
import type { SchemaField } from '../schema/table-schema.js';
import { storageWriteError } from './append-rows.js';

/** A table written through the Storage Write API. */
export interface StorageWriteTarget {
  readonly bigquery: BigQuery;
  /** The Storage Write client, asked for at first use: making it loads its protos (a tenth of an idle run). */
  readonly writer: () => managedwriter.WriterClient;
  readonly project: string;
  readonly dataset: string;
  readonly table: string;
  readonly location: string | null;
  /** The target table's schema, metadata columns included. */
  readonly schema: readonly SchemaField[];
  readonly logger: Logger;
}

/** The target's Storage Write client, made at its first use; `close` closes it only if it was made. */
export function clientOf(target: Pick<StorageWriteTarget, 'writer'>): (() => managedwriter.WriterClient) & {
  close(): void;
} {
  let made: managedwriter.WriterClient | undefined;
  const client = () => {
    made ??= target.writer();
    return made;
  };
  return Object.assign(client, { close: () => made?.close() });
}

/** What a stream of a table is told (the message descriptor) and how its rows are encoded. */
export interface MessageFormat {
  readonly descriptor: ReturnType<typeof adapt.convertStorageSchemaToProto2Descriptor>;
  readonly encode: RowEncoder;
}

export function messageFormat(fields: readonly SchemaField[]): MessageFormat {
  const descriptor = adapt.convertStorageSchemaToProto2Descriptor(
    adapt.convertBigQuerySchemaToStorageTableSchema({ fields: fields as never }),
    'root',
  );
  return { descriptor, encode: compileRowEncoder(fields) };
}

/** `projects/{project}/datasets/{dataset}/tables/{table}`: a stream's parent. */
export function tablePath(target: Pick<StorageWriteTarget, 'project' | 'dataset'>, table: string): string {
  return `projects/${target.project}/datasets/${target.dataset}/tables/${table}`;
}

/**
 * A writer on a new connection to the stream. Without a listener, an error event on the connection would
 * end the process: it is logged, and `onError` told (a kept connection is then forgotten).
 */
export async function connectWriter(
  target: Pick<StorageWriteTarget, 'writer' | 'logger'>,
  streamId: string,
  format: MessageFormat,
  what: string,
  onError?: () => void,
): Promise<managedwriter.Writer> {
  const connection = await target
    .writer()
    .createStreamConnection({ streamId })
    .catch((error: unknown) => {
      throw storageWriteError(error, what);
    });
  connection.on('error', (error: unknown) => {
    target.logger.debug('storage write connection error', { error });
    onError?.();
  });
  return new managedwriter.Writer({ connection, protoDescriptor: format.descriptor });
}
