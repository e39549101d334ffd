import { managedwriter } from '@google-cloud/bigquery-storage';
import { crashPoint } from '../../kernel/crash-points.js';
import { DrainError } from '../../kernel/errors.js';
import { onceUntilFailure } from '../../kernel/once.js';
import type { DeadLetter, KafkaRecord, PartitionRef, Row } from '../../kernel/records.js';
import { maxRecordBytes } from '../../records/records.js';
import {
  deadLetterRow,
  deadLetterTableName,
  deadLetterTableSchema,
  type SchemaField,
} from '../../schema/table-schema.js';
import {
  appendRefusing,
  errorTableRefusal,
  rejectedLetters,
  storageWriteError,
} from '../../sinks/append-rows.js';
import { ensureErrorTable } from '../../sinks/bigquery-tables.js';
import type { StreamSink, StreamState } from '../../sinks/contracts.js';
import { createDirectRows, directAdder } from '../../sinks/direct-rows.js';
import {
  clientOf,
  connectWriter,
  type MessageFormat,
  messageFormat,
  type StorageWriteTarget,
  tablePath,
} from '../../sinks/storage-write-streams.js';
import { heldOffsets, tableStats } from '../../sinks/table-stats.js';

export type StorageWriteSinkOptions = StorageWriteTarget;

export function createStorageWriteSink(options: StorageWriteSinkOptions): StreamSink & { close(): void } {
  const errorTable = deadLetterTableName(options.table);
  const client = clientOf(options);
  // Per table, compiled once: the message descriptor the stream is told, and the encoder of its rows.
  const formats = new Map<string, MessageFormat>();
  const formatOf = (table: string, fields: readonly SchemaField[]) => {
    let format = formats.get(table);
    if (format === undefined) {
      format = messageFormat(fields);
      formats.set(table, format);
    }
    return format;
  };
  // Per route shape (and value format): its records straight to this table's messages (#42).
  const directRows = createDirectRows(options.schema);
  const errorTableReady = onceUntilFailure(() =>
    ensureErrorTable(options.bigquery, options, errorTable, deadLetterTableSchema),
  );

  /**
   * Appends encoded rows (sized by their bytes, sent as they are) to a new PENDING stream of `table` at explicit offsets, finalizes it, checks the count.
   * BigQuery refuses a whole append when any of its rows has an error, and says which (row errors, with
   * their index): the same append is made again without those rows, at the same offset, on the same
   * stream. Returns the stream (none when every row was refused) and the refused rows' indexes in `rows`.
   */
  async function writeStream(
    table: string,
    fields: readonly SchemaField[],
    encoded: readonly Uint8Array[],
  ): Promise<{ stream: string | undefined; refused: Map<number, string> }> {
    const format = formatOf(table, fields);
    let stream: string;
    try {
      stream = await client().createWriteStream({
        streamType: managedwriter.PendingStream,
        destinationTable: tablePath(options, table),
      });
    } catch (error) {
      throw storageWriteError(error, `create a stream on ${table}`);
    }
    const writer = await connectWriter({ writer: client, logger: options.logger }, stream, format, 'connect');
    try {
      const { appended: offset, refused } = await appendRefusing(writer, encoded, table, {
        offsets: true,
        error: storageWriteError,
      });
      if (offset === 0) {
        // Every row was refused: the stream holds nothing and is never committed (it expires).
        return { stream: undefined, refused };
      }
      crashPoint('after-append');
      const finalized = await client()
        .finalizeWriteStream({ name: stream })
        .catch((error: unknown) => {
          throw storageWriteError(error, 'finalize');
        });
      if (Number(finalized.rowCount) !== offset) {
        throw new DrainError(
          `bigquery storage write: stream ${stream} holds ${finalized.rowCount} rows, ${offset} were appended`,
          { retriable: true },
        );
      }
      crashPoint('after-finalize');
      return { stream, refused };
    } finally {
      writer.close();
    }
  }

  /**
   * What the first flush would otherwise pay, once a leased partition has records to read (a run that
   * finds nothing never pays it): the Storage Write client made, its protos loaded and its channel
   * connected (no call is made) while the first fetch is under way. A channel not ready in 10 s is the first
   * flush's business.
   */
  const warmUp = onceUntilFailure(async () => {
    try {
      await client().initialize();
      const stub = (await client().getClient().bigQueryWriteStub) as unknown as ChannelLike;
      await new Promise<void>((resolve) => stub.waitForReady(Date.now() + 10_000, () => resolve()));
    } catch (error) {
      options.logger.debug('warming the Storage Write client up failed', { error });
    }
  });

  return {
    warmUp,

    async startEncoding(shape, format) {
      const encoding = formatOf(options.table, options.schema).encode.batch();
      const transcode = shape === undefined ? undefined : directRows(shape, format);
      const records: KafkaRecord[] = [];
      return {
        add(row) {
          encoding.add(row.row);
          records.push(row.record);
        },
        ...(transcode === undefined ? {} : { addRecord: directAdder(encoding, records, transcode) }),
        finish: () => encoding.finish().map((bytes, i) => ({ record: records[i]!, bytes })),
      };
    },

    async prepare(rows, letters, ingestedAt) {
      const streams: string[] = [];
      const rejected: DeadLetter[] = [];
      if (rows.length > 0) {
        const written = await writeStream(
          options.table,
          options.schema,
          rows.map((r) => r.bytes),
        );
        if (written.stream !== undefined) streams.push(written.stream);
        rejected.push(...rejectedLetters(rows, written.refused));
      }
      const toErrorTable = [...letters, ...rejected];
      if (toErrorTable.length > 0) {
        await errorTableReady();
        const written = await writeStream(
          errorTable,
          deadLetterTableSchema,
          formatOf(errorTable, deadLetterTableSchema).encode.many(
            toErrorTable.map((l) => deadLetterRow(l, ingestedAt, maxRecordBytes) as Row),
          ),
        );
        if (written.refused.size > 0) throw errorTableRefusal(toErrorTable, written.refused);
        streams.push(written.stream!);
      }
      return { streams, rejected };
    },

    async commit(streams) {
      // One stream a call: a stream found already committed (by a run that took over) must not make the
      // commit of another stream fail, as one atomic call would.
      for (const stream of streams) {
        const parent = stream.slice(0, stream.indexOf('/streams/'));
        let response: Awaited<ReturnType<managedwriter.WriterClient['batchCommitWriteStream']>>;
        try {
          response = await client().batchCommitWriteStream({ parent, writeStreams: [stream] });
        } catch (error) {
          throw storageWriteError(error, 'commit');
        }
        const errors = (response.streamErrors ?? []).filter(
          (e) => String(e.code) !== 'STREAM_ALREADY_COMMITTED',
        );
        if (errors.length > 0) {
          const gone = errors.some((e) => String(e.code) === 'STREAM_NOT_FOUND');
          throw new DrainError(
            `bigquery storage write commit: ${errors.map((e) => `${e.code} ${e.errorMessage ?? ''}`).join('; ')}`,
            { retriable: !gone, code: String(errors[0]!.code) },
          );
        }
      }
    },

    async streamState(stream): Promise<StreamState> {
      try {
        const found = await client().getWriteStream({ streamId: stream });
        return found.commitTime ? 'committed' : 'pending';
      } catch (error) {
        if ((error as { code?: unknown }).code === 5) return 'gone';
        throw storageWriteError(error, 'read a stream');
      }
    },

    async heldInRange(partition: PartitionRef, from: number, to: number) {
      const held = (table: string) =>
        tableStats(
          options.bigquery,
          { dataset: options.dataset, table },
          partition.topic,
          partition.partition,
          from,
          to,
        )
          .then((stats) => stats.distinctOffsets)
          .catch((error: unknown) => {
            // No error table yet: no dead letter was ever written there.
            if (table === errorTable && /not found/i.test(String((error as Error).message))) return 0;
            throw error;
          });
      return { rows: await held(options.table), deadLetters: await held(errorTable) };
    },

    heldOffsets: (partition, from, to) =>
      heldOffsets(options.bigquery, { dataset: options.dataset, table: options.table }, partition, from, to),

    close() {
      client.close(); // an idle run never made it
    },
  };
}

/** The gRPC client under the generated one (@grpc/grpc-js's Client). */
interface ChannelLike {
  waitForReady(deadline: number, callback: (error?: Error) => void): void;
}
