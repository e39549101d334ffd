/**
 * The record path alone, in this process, per format: the same wide records as JSON, Avro, Protobuf and
 * JSON Schema (values as their producers frame them), each through the general path (decode, convert,
 * validate, encode the row) and through the compiled path (the bytes straight to the row's message, the
 * metadata columns included), rounds alternating, the median round standing. No Kafka, no BigQuery: what
 * a record costs between its bytes and its row, before and after the compiled paths (#42). And cdc
 * mode's: Debezium's Avro change events to the upsert's message (debezium-path.ts).
 */

import { compileTranscoder, metadataWriter, type Transcode } from '../functions/encoders/json-transcoder.js';
import { ProtoWriter } from '../functions/encoders/proto-writer.js';
import { compileRowEncoder } from '../functions/encoders/row-encoder.js';
import { compileAvro } from '../functions/formats/avro/schema.js';
import { compileJsonSchema } from '../functions/formats/json-schema/schema.js';
import { compileProtobuf } from '../functions/formats/protobuf/schema.js';
import type { SchemaRegistry } from '../functions/formats/schema-registry.js';
import type { ValueFormat } from '../functions/formats/value-format.js';
import type { KafkaRecord } from '../functions/kernel/records.js';
import { isDeadLetter, type RowShape, toRow } from '../functions/records/records.js';
import { type SchemaField, targetTableSchema } from '../functions/schema/table-schema.js';
import { generalFormat } from '../test/support/differential.js';
import { wideAvroSchema, wideAvroValue } from './avro-shape.js';
import { debeziumPathFigures } from './debezium-path.js';
import { wideJsonSchema, wideJsonSchemaValue, wideProto, wideProtobufValue } from './registry-shapes.js';
import { wide } from './shapes.js';

export interface PathFigures {
  readonly format: string;
  /** CPU µs a record, the median round's. */
  readonly generalUs: number;
  readonly compiledUs: number;
  /** Records the compiled path wrote (the rest it left to the general one). */
  readonly compiledShare: number;
}

const metadata = { headers: false, keyText: false };

interface Subject {
  readonly format: string;
  readonly values: Buffer[];
  readonly shape: RowShape;
  readonly target: readonly SchemaField[];
  readonly valueFormat?: ValueFormat;
  readonly direct: Transcode;
}

function cpuUs(run: () => void): number {
  const start = process.cpuUsage();
  run();
  const used = process.cpuUsage(start);
  return used.user + used.system;
}

function measure(subject: Subject, rounds: number): PathFigures {
  const { values, shape, target, valueFormat, direct } = subject;
  const encode = compileRowEncoder(target);
  const ingestedAt = new Date();
  const micros = ingestedAt.getTime() * 1000;
  const records: KafkaRecord[] = values.map((value, i) => ({
    topic: 'bench',
    partition: i % 4,
    offset: i,
    timestamp: 1733300000000 + i,
    key: Buffer.from(`k${i}`),
    value,
    headers: {},
  }));
  const w = new ProtoWriter(1 << 20);
  let compiled = 0;
  const general = () => {
    const batch = encode.batch();
    for (const record of records) {
      const made = toRow(record, ingestedAt, shape, valueFormat);
      if (isDeadLetter(made)) throw new Error(`${subject.format}: ${made.message}`);
      batch.add(made.row);
    }
  };
  const straight = () => {
    compiled = 0;
    for (const record of records) {
      w.position = 0;
      if (direct(w, record, micros)) compiled++;
      else {
        const made = toRow(record, ingestedAt, shape, valueFormat);
        if (!isDeadLetter(made)) encode(made.row);
      }
    }
  };
  const generalRounds: number[] = [];
  const compiledRounds: number[] = [];
  for (let i = 0; i < rounds; i++) {
    generalRounds.push(cpuUs(general) / records.length);
    compiledRounds.push(cpuUs(straight) / records.length);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
  return {
    format: subject.format,
    generalUs: median(generalRounds),
    compiledUs: median(compiledRounds),
    compiledShare: compiled / records.length,
  };
}

/**
 * The four formats' figures on `count` wide records, `rounds` alternating rounds each; then cdc mode's on
 * as many Debezium Avro events (debezium-path.ts).
 */
export async function recordPathFigures(count: number, rounds = 5): Promise<PathFigures[]> {
  const indexes = Array.from({ length: count }, (_, i) => i);
  const subjects: Subject[] = [];
  const jsonShape: RowShape = { fields: wide.schema as SchemaField[], unknownFields: 'reject', metadata };
  const jsonTarget = targetTableSchema(jsonShape.fields, metadata);
  subjects.push({
    format: 'JSON',
    values: indexes.map((i) => Buffer.from(wide.value(i))),
    shape: jsonShape,
    target: jsonTarget,
    direct: compileTranscoder(jsonShape, jsonTarget)!,
  });
  const registry = {} as SchemaRegistry;
  const registered = [
    {
      format: 'Avro',
      compiled: compileAvro(JSON.stringify(wideAvroSchema)),
      value: wideAvroValue,
      header: 5,
    },
    {
      format: 'Protobuf',
      compiled: await compileProtobuf(
        { id: 1, schemaType: 'PROTOBUF', schema: wideProto, references: [] },
        registry,
      ),
      value: wideProtobufValue,
      header: 5,
    },
    {
      format: 'JSON Schema',
      compiled: compileJsonSchema(JSON.stringify(wideJsonSchema)),
      value: wideJsonSchemaValue,
      header: 5,
    },
  ];
  for (const { format, compiled, value, header } of registered) {
    const shape: RowShape = { fields: compiled.fields, unknownFields: 'reject', metadata };
    const target = targetTableSchema(compiled.fields, metadata);
    const rows = compiled.rows?.(target);
    const meta = metadataWriter(shape, target)!;
    if (rows === undefined) throw new Error(`${format}: no compiled path for the wide shape`);
    // The Protobuf path reads its message indexes after the 5-byte header; the others, the payload there.
    subjects.push({
      format,
      values: indexes.map((i) => value(i, 1)),
      shape,
      target,
      valueFormat: generalFormat(
        compiled,
        format === 'Avro' ? 'avro' : format === 'Protobuf' ? 'protobuf' : 'json-schema',
        header,
      ),
      direct: (w, record, micros) => rows(w, record.value!, header) && meta(w, record, micros),
    });
  }
  return [...subjects.map((s) => measure(s, rounds)), await debeziumPathFigures(count, rounds)];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const figures = await recordPathFigures(Number(process.env.BENCH_RECORDS ?? 20_000));
  console.table(
    figures.map((f) => ({
      format: f.format,
      'general µs/rec': f.generalUs.toFixed(2),
      'compiled µs/rec': f.compiledUs.toFixed(2),
      'compiled share': `${(f.compiledShare * 100).toFixed(1)}%`,
    })),
  );
}
