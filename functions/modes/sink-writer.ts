import { compileRowText, metadataText, type RowText, rowJson } from '../encoders/row-text.js';
import type { ValueFormat } from '../formats/value-format.js';
import { crashPoint } from '../kernel/crash-points.js';
import type { BatchToWrite, DeadLetters, Sink, Writer, WrittenBatch } from '../kernel/ports.js';
import type { DeadLetter, KafkaRecord, RowToInsert } from '../kernel/records.js';
import { classifyEach, directFormat, directShape, type RecordPolicy } from '../records/classify.js';
import { type RowShape, rowKey } from '../records/records.js';
import type { SchemaField } from '../schema/table-schema.js';
import type { ErrorTable } from '../sinks/contracts.js';
import { publishDeadLetters } from './dead-letters.js';

export interface SinkWriterOptions {
  readonly sink: Sink;
  readonly deadLetters: DeadLetters;
  readonly records: RecordPolicy;
  readonly now: () => number;
}

/**
 * `insert-all` mode (at least once): each batch's rows through the streaming insert API, whose row
 * errors become `rejected` dead letters; then the dead letters are published; then the drain commits.
 */
export function createInsertAllWriter(options: SinkWriterOptions): Writer {
  return sinkWriter(options);
}

/**
 * `merge` mode (exactly once): the batches of the partitions ready at once are merged into the target
 * in one flush (see sinks/merge-sink.ts), the dead letters written to the error table (idempotent by
 * origin) before they are published; then the drain commits.
 */
export function createMergeWriter(options: SinkWriterOptions & { readonly errorTable: ErrorTable }): Writer {
  return sinkWriter(options);
}

/**
 * How a writer makes a JSON record's row straight from its text, when it can: JSON records without
 * business rules go out as their own text. Compiled once per route shape.
 */
export function rowTexts(): (policy: RecordPolicy) => RowText | undefined {
  const compiled = new WeakMap<RowShape, RowText | null>();
  const byFormat = new WeakMap<RowShape, RowText>();
  return (policy) => {
    const format = directFormat(policy);
    if (format !== undefined && policy.shape?.metadata?.headers !== true) {
      const shape = policy.shape!;
      if (!byFormat.has(shape)) byFormat.set(shape, formatTexts(shape, format));
      return byFormat.get(shape);
    }
    const shape = directShape(policy);
    if (shape === undefined) return undefined;
    if (!compiled.has(shape)) compiled.set(shape, compileRowText(shape) ?? null);
    return compiled.get(shape) ?? undefined;
  };
}

/**
 * A registry format's JSON text payloads (JSON Schema) as rows, read against their own schema's fields
 * (compiled once per schema): as text nothing is skipped, so a field the schema does not name, which the
 * general path leaves out, sends the record the general way.
 */
function payloadTexts(
  shape: RowShape,
  textFields: (record: KafkaRecord) => readonly SchemaField[] | undefined,
): RowText {
  const bySchema = new WeakMap<readonly SchemaField[], RowText | null>();
  return (record, ingestedAt) => {
    const fields = textFields(record);
    if (fields === undefined) return undefined;
    let text = bySchema.get(fields);
    if (text === undefined) {
      // After the wire format's 5-byte header.
      text = compileRowText({ ...shape, fields }, 5) ?? null;
      bySchema.set(fields, text);
    }
    return text?.(record, ingestedAt);
  };
}

/**
 * A registry format's records as row text where the format has a path for their schema: Avro's fields
 * written from the binary, JSON Schema's own text.
 */
function formatTexts(shape: RowShape, format: ValueFormat): RowText {
  const members = format.membersText?.(shape.fields);
  const metadata = metadataText(shape.metadata?.keyText === true);
  const own =
    format.textFields === undefined ? undefined : payloadTexts(shape, format.textFields.bind(format));
  return (record, ingestedAt) => {
    const text = members?.(record);
    if (text === undefined) return own?.(record, ingestedAt);
    const head = metadata(record, ingestedAt);
    return head === undefined
      ? undefined
      : rowJson(head, text, 0, text.length, { comma: text.length > 0, close: true });
  };
}

function sinkWriter(options: SinkWriterOptions & { readonly errorTable?: ErrorTable }): Writer {
  const rowTextOf = rowTexts();
  return {
    recover: async () => ({}),
    begin: async () => {},
    write: (batch, signal) => {
      const rowText = rowTextOf(options.records);
      return writeBatch(
        batch.records,
        { ...options, ...(rowText === undefined ? {} : { rowText }) },
        { ...options.records, ingestedAt: new Date(options.now()), signal },
      );
    },
  };
}

/**
 * One batch's way to durability: decode every record, write the rows, dead-letter what could not be
 * decoded or was rejected (into the error table first, in merge mode), and resolve only when all of it is
 * durable. Throws (and so leaves the checkpoint where it was) when the sink, the error table or the
 * dead-letter topic fails.
 */
export async function writeBatch(
  records: BatchToWrite['records'],
  ports: {
    readonly sink: Sink;
    readonly deadLetters: DeadLetters;
    readonly errorTable?: ErrorTable;
    /** Makes a JSON record's row straight from its text, or leaves the record to the general path. */
    readonly rowText?: RowText;
  },
  policy: RecordPolicy & { readonly ingestedAt: Date; readonly signal?: AbortSignal },
): Promise<WrittenBatch> {
  const { ingestedAt } = policy;
  const { rows, letters, tombstones, filtered } = await classifyRows(
    records,
    policy,
    ingestedAt,
    ports.rowText,
  );
  let written = 0;
  if (rows.length > 0) {
    const results = await ports.sink.write(rows, policy.signal);
    results.forEach((result, i) => {
      if (result.ok) written++;
      else letters.push({ record: rows[i]!.record, kind: 'rejected', message: result.reason });
    });
  }
  crashPoint('after-write');
  if (ports.errorTable !== undefined && letters.length > 0) {
    await ports.errorTable.write(letters, ingestedAt, policy.signal);
    crashPoint('after-error-table');
  }
  await publishDeadLetters(letters, ports.deadLetters);
  crashPoint('after-dead-letter-before-commit');
  return { rows: written, deadLetters: letters.length, tombstones, ...(filtered > 0 ? { filtered } : {}) };
}

/** The batch's records as rows to insert (a JSON record's straight from its text where it can be), dead letters and tombstones. */
export async function classifyRows(
  records: BatchToWrite['records'],
  policy: RecordPolicy,
  ingestedAt: Date,
  rowText: RowText | undefined,
): Promise<{ rows: RowToInsert[]; letters: DeadLetter[]; tombstones: number; filtered: number }> {
  const rows: RowToInsert[] = [];
  const { letters, tombstones, filtered } = await classifyEach(
    records,
    policy,
    ingestedAt,
    (row) => rows.push(row),
    rowText === undefined
      ? undefined
      : (record) => {
          const json = rowText(record, ingestedAt);
          if (json === undefined) return false;
          rows.push({ rowKey: rowKey(record), record, json });
          return true;
        },
  );
  return { rows, letters, tombstones, filtered };
}
