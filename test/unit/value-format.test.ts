import avro from 'avsc';
import { describe, expect, test } from 'vitest';
import { compileAvro } from '../../functions/formats/avro/schema.js';
import {
  type RegisteredSchema,
  SchemaNotFoundError,
  type SchemaRegistry,
} from '../../functions/formats/schema-registry.js';
import { createRegistryFormat } from '../../functions/formats/value-format.js';
import { DrainError, PartitionWaitsError } from '../../functions/kernel/errors.js';
import { createLogger } from '../../functions/kernel/logger.js';
import type { KafkaRecord } from '../../functions/kernel/records.js';

const v1 = { type: 'record', name: 'User', fields: [{ name: 'id', type: 'long' }] };
const v2 = { ...v1, fields: [...v1.fields, { name: 'email', type: ['null', 'string'], default: null }] };
const changed = { ...v1, fields: [{ name: 'id', type: 'string' }] };
const schemas: Record<number, object> = { 1: v1, 2: v2, 3: changed };

function wire(id: number, schema: object, value: object): Buffer {
  const header = Buffer.alloc(5);
  header.writeUInt32BE(id, 1);
  return Buffer.concat([
    header,
    avro.Type.forSchema(schema as avro.Schema, { wrapUnions: true }).toBuffer(value),
  ]);
}

function record(value: Buffer | null, offset = 0): KafkaRecord {
  return { topic: 't', partition: 0, offset, timestamp: 0, key: null, value, headers: {} };
}

function setup(options: { columns?: object; down?: () => boolean } = {}) {
  const asked: number[] = [];
  const lines: Record<string, unknown>[] = [];
  const registry: SchemaRegistry = {
    async schemaById(id) {
      asked.push(id);
      if (options.down?.()) throw new DrainError('the schema registry did not answer', { retriable: true });
      const schema = schemas[id];
      if (schema === undefined) throw new SchemaNotFoundError(`no schema id ${id}`);
      return {
        id,
        schemaType: 'AVRO',
        schema: JSON.stringify(schema),
        references: [],
      } satisfies RegisteredSchema;
    },
    subjectVersion: async () => {
      throw new Error('not used');
    },
  };
  const format = createRegistryFormat({
    schemaType: 'AVRO',
    name: 'avro',
    registry,
    compile: async (s) => compileAvro(s.schema),
    columns: compileAvro(JSON.stringify(options.columns ?? v2)).fields,
    columnsFollowSchema: true,
    retry: { attempts: 3, initialDelayMs: 1, maxDelayMs: 2 },
    logger: createLogger({ write: (line) => lines.push(JSON.parse(line)) }),
  });
  return { format, asked, lines };
}

describe('values through the schema registry', () => {
  test('each schema id is fetched once; records of every version fit the table (older ones with NULL)', async () => {
    const { format, asked } = setup();
    const records = [
      record(wire(1, v1, { id: 1 })),
      record(wire(2, v2, { id: 2, email: { string: 'a@b' } })),
      record(wire(1, v1, { id: 3 })),
    ];
    await format.prepare(records);
    await format.prepare(records);
    expect(asked).toEqual([1, 2]);
    expect(records.map((r) => format.decode(r.value!))).toEqual([
      { ok: true, value: { id: 1 } },
      { ok: true, value: { id: 2, email: 'a@b' } },
      { ok: true, value: { id: 3 } },
    ]);
  });

  test('an unknown id and a value without the magic byte are decode dead letters', async () => {
    const { format } = setup();
    const unknown = record(wire(99, v1, { id: 1 }));
    const plain = record(Buffer.from('{"id":1}'));
    await format.prepare([unknown, plain]);
    expect(format.decode(unknown.value!)).toEqual({
      ok: false,
      kind: 'decode',
      message: 'schema id 99 is not in the schema registry',
    });
    expect(format.decode(plain.value!)).toMatchObject({
      ok: false,
      kind: 'decode',
      message: expect.stringMatching(/magic byte 0/),
    });
  });

  test('a registry that does not answer makes the partition wait; nothing is judged, and it is asked again later', async () => {
    let down = true;
    const { format, asked } = setup({ down: () => down });
    const records = [record(wire(1, v1, { id: 1 }))];
    await expect(format.prepare(records)).rejects.toBeInstanceOf(PartitionWaitsError);
    expect(asked).toEqual([1, 1, 1]); // the retry policy's three attempts
    down = false;
    await format.prepare(records);
    expect(format.decode(records[0]!.value!)).toEqual({ ok: true, value: { id: 1 } });
  });

  test('a version with columns the table lacks waits for the next run, which adds them first', async () => {
    const { format } = setup({ columns: v1 });
    await expect(format.prepare([record(wire(2, v2, { id: 1, email: null }))])).rejects.toThrow(
      /schema id 2 have columns the table lacks \(email\)/,
    );
  });

  test('an incompatible version: its records are schema dead letters naming the field, said once', async () => {
    const { format, lines, asked } = setup({ columns: v1 });
    const records = [
      record(wire(3, changed, { id: 'x' })),
      record(wire(3, changed, { id: 'y' }), 1),
      record(wire(1, v1, { id: 5 }), 2),
    ];
    // Two partitions' batches naming the new ids at once: one lookup each, one warning.
    await Promise.all([format.prepare(records), format.prepare(records)]);
    expect(asked).toEqual([3, 1]);
    expect(records.map((r) => format.decode(r.value!))).toEqual([
      {
        ok: false,
        kind: 'schema',
        message: "schema id 3 does not fit the table: field id is STRING but the table's column is INT64",
      },
      {
        ok: false,
        kind: 'schema',
        message: "schema id 3 does not fit the table: field id is STRING but the table's column is INT64",
      },
      { ok: true, value: { id: 5 } },
    ]);
    expect(lines.filter((l) => l.event === 'schema_incompatible')).toHaveLength(1);
  });
});
