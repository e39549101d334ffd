/**
 * `cdc` mode's BigQuery side: change data capture through the Storage Write API's `_default` stream.
 * Each row carries `_CHANGE_TYPE` and `_CHANGE_SEQUENCE_NUMBER`; BigQuery applies them by primary key. The
 * default stream is at least once (an append retried after a lost answer may land twice), which changes
 * nothing here: a change applied twice, or after a later one, leaves the key's latest change in place.
 * Dead letters go to the error table the same way, keyed by their origin (topic, partition, offset), so
 * that a replayed letter replaces itself instead of doubling.
 * https://cloud.google.com/bigquery/docs/change-data-capture
 */
import type { BigQuery, TableMetadata } from '@google-cloud/bigquery';
import type { managedwriter } from '@google-cloud/bigquery-storage';
import type { Transcode } from '../../encoders/json-transcoder.js';
import type { ProtoWriter } from '../../encoders/proto-writer.js';
import { envelopeChange } from '../../formats/mapped.js';
import type { ValueFormat } from '../../formats/value-format.js';
import { crashPoint } from '../../kernel/crash-points.js';
import { DrainError } from '../../kernel/errors.js';
import { onceUntilFailure } from '../../kernel/once.js';
import type { DeadLetter, KafkaRecord, Row, RowToWrite } from '../../kernel/records.js';
import { changeSequenceColumn, changeTypeColumn, sequenceNumber } from '../../records/changes.js';
import { maxRecordBytes, type RowShape } from '../../records/records.js';
import {
  deadLetterKey,
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
import { addMissingColumns, bigQueryError, createTableIfMissing } from '../../sinks/bigquery-tables.js';
import type { EncodedRow } from '../../sinks/contracts.js';
import { createDirectRows, type DirectRows, directAdder } from '../../sinks/direct-rows.js';
import {
  clientOf,
  connectWriter,
  messageFormat,
  type StorageWriteTarget,
  tablePath,
} from '../../sinks/storage-write-streams.js';

export { cdcSourceFields, deadLetterKey } from '../../schema/table-schema.js';

const pseudoColumns: readonly SchemaField[] = [
  { name: changeTypeColumn, type: 'STRING', mode: 'NULLABLE' },
  { name: changeSequenceColumn, type: 'STRING', mode: 'NULLABLE' },
];

export interface ChangeSink {
  /**
   * Applies the changes to the target table and the dead letters to the error table. A row BigQuery
   * refuses is left out and becomes a `rejected` dead letter with BigQuery's message. Resolves once
   * every append is acknowledged. `encoded`: changes written straight from their records (`startEncoding`).
   */
  apply(
    rows: readonly RowToWrite[],
    letters: readonly DeadLetter[],
    ingestedAt: Date,
    encoded?: readonly EncodedRow[],
  ): Promise<DeadLetter[]>;
  /**
   * A batch's changes written straight from their records' bytes (JSON text, a registry format's binary:
   * the compiled paths of #42; upserts, and the deletes of Debezium's Avro envelopes) into the table's
   * messages with their change columns, where that applies to the route (undefined: every record takes
   * the general path). A record whose primary key is null or missing, or that the compiled path is not
   * sure of, is left to the general path (false).
   */
  startEncoding(
    shape: RowShape,
    format: ValueFormat | undefined,
    primaryKey: readonly string[],
  ): Promise<ChangeEncoding | undefined>;
  close(): void;
}

/** A batch's changes encoded as they come; `finish` gives them in the order they were taken. */
export interface ChangeEncoding {
  addRecord(record: KafkaRecord, ingestedAt: Date): boolean;
  finish(): EncodedRow[];
}

export interface CdcTableOptions {
  readonly primaryKey: readonly string[];
  /** BigQuery's max_staleness, as its INTERVAL text (`0-0 0 0:15:0`), or null for none. */
  readonly maxStaleness: string | null;
}

/** A CDC table's metadata: its primary key (NOT ENFORCED, as every BigQuery key), clustered by it. */
export function cdcTableMetadata(options: CdcTableOptions) {
  return {
    tableConstraints: { primaryKey: { columns: [...options.primaryKey] } },
    clustering: { fields: options.primaryKey.slice(0, 4) },
    ...(options.maxStaleness === null ? {} : { maxStaleness: options.maxStaleness }),
  };
}

/** Creates a CDC table if missing; an existing table must have the same primary key. */
export async function ensureCdcTable(
  bigquery: BigQuery,
  target: { dataset: string; location: string | null },
  name: string,
  fields: readonly SchemaField[],
  options: CdcTableOptions,
): Promise<void> {
  try {
    const wanted = { schema: { fields: [...fields] }, ...cdcTableMetadata(options) } as TableMetadata;
    const { table, existed } = await createTableIfMissing(
      bigquery.dataset(target.dataset),
      name,
      wanted,
      target,
    );
    if (!existed) return;
    // An error table made by an older drain: the columns added since (a table's own are evolved apart).
    if (fields === deadLetterTableSchema) await addMissingColumns(table, fields);
    const [metadata] = await table.getMetadata();
    const key: string[] = metadata.tableConstraints?.primaryKey?.columns ?? [];
    if (key.join(',') !== options.primaryKey.join(',')) {
      throw new DrainError(
        `table ${target.dataset}.${name} has primary key (${key.join(', ') || 'none'}), not (${options.primaryKey.join(', ')}): ` +
          'cdc mode needs the table keyed as BQ_PRIMARY_KEY says (ALTER TABLE ... ADD PRIMARY KEY (...) NOT ENFORCED, or a new table)',
        { retriable: false, code: 'primary_key' },
      );
    }
  } catch (error) {
    throw bigQueryError(error, `ensure the cdc table ${name}`);
  }
}

export interface CdcSinkOptions extends StorageWriteTarget {
  readonly maxStaleness: string | null;
}

export function createCdcSink(options: CdcSinkOptions): ChangeSink {
  const errorTable = deadLetterTableName(options.table);
  const client = clientOf(options);
  const connections = new Map<string, Promise<managedwriter.Writer>>();
  const formatOf = (fields: readonly SchemaField[]) => {
    // A DELETE carries only the key: no column may be required of the message (the table keeps its modes).
    const all = [...fields, ...pseudoColumns].map((f) =>
      f.mode === 'REQUIRED' ? { ...f, mode: 'NULLABLE' as const } : f,
    );
    return messageFormat(all);
  };
  const formats = {
    [options.table]: formatOf(options.schema),
    [errorTable]: formatOf(deadLetterTableSchema),
  };
  // Per primary key: the compiled paths, for the table's columns with the key's made REQUIRED (a record
  // with a null or missing key column is the general path's: a dead letter).
  const directs = new Map<string, { shapes: WeakMap<RowShape, RowShape>; rows: DirectRows }>();
  const directOf = (shape: RowShape, format: ValueFormat | undefined, primaryKey: readonly string[]) => {
    const key = primaryKey.join(',');
    let direct = directs.get(key);
    if (direct === undefined) {
      direct = {
        shapes: new WeakMap(),
        rows: createDirectRows(keyRequired(options.schema, primaryKey), primaryKey),
      };
      directs.set(key, direct);
    }
    let keyed = direct.shapes.get(shape);
    if (keyed === undefined) {
      keyed = { ...shape, fields: keyRequired(shape.fields, primaryKey) };
      direct.shapes.set(shape, keyed);
    }
    return direct.rows(keyed, format);
  };
  // The change columns follow the table's (formatOf): a direct row is an upsert at its offset, or the
  // delete a Debezium envelope's path says it wrote (envelopeChange).
  const changeTypeTag = ((options.schema.length + 1) << 3) | 2;
  const sequenceTag = ((options.schema.length + 2) << 3) | 2;
  const changeColumns = (w: ProtoWriter, record: KafkaRecord) => {
    w.varint(changeTypeTag);
    w.string(envelopeChange.deleted ? 'DELETE' : 'UPSERT');
    w.varint(sequenceTag);
    w.string(sequenceNumber(record.offset));
    return true;
  };
  const errorTableReady = onceUntilFailure(() =>
    ensureCdcTable(options.bigquery, options, errorTable, deadLetterTableSchema, {
      primaryKey: deadLetterKey,
      maxStaleness: options.maxStaleness,
    }),
  );

  /** One connection to a table's `_default` stream, kept for the run; forgotten when it fails. */
  function connectionTo(table: string): Promise<managedwriter.Writer> {
    let made = connections.get(table);
    if (made === undefined) {
      made = (async () => {
        const streamId = `${tablePath(options, table)}/streams/_default`;
        return connectWriter(
          { writer: client, logger: options.logger },
          streamId,
          formats[table]!,
          `connect to ${table}'s default stream`,
          () => connections.delete(table),
        );
      })();
      made.catch(() => connections.delete(table));
      connections.set(table, made);
    }
    return made;
  }

  async function append(
    table: string,
    rows: readonly Row[],
    direct: readonly EncodedRow[] = [],
  ): Promise<Map<number, string>> {
    const encoded = [...formats[table]!.encode.many(rows), ...direct.map((e) => e.bytes)];
    const writer = await connectionTo(table);
    try {
      const { refused } = await appendRefusing(writer, encoded, table, {
        offsets: false,
        error: storageWriteError,
      });
      return refused;
    } catch (error) {
      // The connection may be broken: the next append opens a new one.
      connections.delete(table);
      writer.close();
      throw error;
    }
  }

  return {
    async startEncoding(shape, format, primaryKey) {
      const transcode = primaryKey.length === 0 ? undefined : directOf(shape, format, primaryKey);
      if (transcode === undefined) return undefined;
      const encoding = formats[options.table]!.encode.batch();
      const records: KafkaRecord[] = [];
      const change: Transcode = (w, record, micros) => {
        envelopeChange.deleted = false; // only an envelope's path sets it: any other row is an upsert
        return transcode(w, record, micros) && changeColumns(w, record);
      };
      return {
        addRecord: directAdder(encoding, records, change),
        finish: () => encoding.finish().map((bytes, i) => ({ record: records[i]!, bytes })),
      };
    },

    async apply(rows, letters, ingestedAt, encoded = []) {
      const rejected: DeadLetter[] = [];
      if (rows.length + encoded.length > 0) {
        const refused = await append(
          options.table,
          rows.map((r) => r.row),
          encoded,
        );
        crashPoint('after-append');
        rejected.push(...rejectedLetters([...rows, ...encoded], refused));
      }
      const toErrorTable = [...letters, ...rejected];
      if (toErrorTable.length > 0) {
        await errorTableReady();
        const refused = await append(
          errorTable,
          toErrorTable.map((l) => ({
            ...deadLetterRow(l, ingestedAt, maxRecordBytes),
            [changeTypeColumn]: 'UPSERT',
            [changeSequenceColumn]: sequenceNumber(l.record.offset),
          })),
        );
        if (refused.size > 0) throw errorTableRefusal(toErrorTable, refused);
      }
      return rejected;
    },
    close() {
      for (const made of connections.values()) void made.then((w) => w.close()).catch(() => {});
      client.close();
    },
  };
}

/** The columns with those of the primary key made REQUIRED (what the compiled paths then insist on). */
function keyRequired(fields: readonly SchemaField[], primaryKey: readonly string[]): SchemaField[] {
  return fields.map((f) => (primaryKey.includes(f.name) ? { ...f, mode: 'REQUIRED' as const } : f));
}
