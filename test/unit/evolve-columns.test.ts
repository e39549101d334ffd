import { describe, expect, test } from 'vitest';
import { PartitionWaitsError } from '../../functions/kernel/errors.js';
import type { KafkaRecord } from '../../functions/kernel/records.js';
import { classifyEach } from '../../functions/records/classify.js';
import { createColumnEvolver, inferField } from '../../functions/records/evolve-columns.js';
import type { SchemaField } from '../../functions/schema/table-schema.js';

const record = (offset: number, value: unknown): KafkaRecord => ({
  topic: 't',
  partition: 0,
  offset,
  timestamp: 0,
  key: null,
  value: Buffer.from(JSON.stringify(value)),
  headers: {},
});

describe('inferField', () => {
  test.each([
    ['s', 'text', { type: 'STRING', mode: 'NULLABLE' }],
    ['b', true, { type: 'BOOL', mode: 'NULLABLE' }],
    ['i', 42, { type: 'INT64', mode: 'NULLABLE' }],
    ['f', 4.5, { type: 'FLOAT64', mode: 'NULLABLE' }],
    ['big', 2 ** 60, { type: 'FLOAT64', mode: 'NULLABLE' }],
    ['tags', [null, 'a', 'b'], { type: 'STRING', mode: 'REPEATED' }],
    [
      'o',
      { a: 1, b: null, c: { d: 'x' } },
      {
        type: 'RECORD',
        mode: 'NULLABLE',
        fields: [
          { name: 'a', type: 'INT64', mode: 'NULLABLE' },
          {
            name: 'c',
            type: 'RECORD',
            mode: 'NULLABLE',
            fields: [{ name: 'd', type: 'STRING', mode: 'NULLABLE' }],
          },
        ],
      },
    ],
    [
      'items',
      [{ n: 1 }],
      { type: 'RECORD', mode: 'REPEATED', fields: [{ name: 'n', type: 'INT64', mode: 'NULLABLE' }] },
    ],
  ])('%s: %j', (name, value, field) => {
    expect(inferField(name, value as never)).toEqual({ name, ...field });
  });

  test('null, [] and {} say nothing; a name BigQuery refuses and an array of arrays cannot be columns', () => {
    expect(inferField('n', null)).toBeUndefined();
    expect(inferField('n', [])).toBeUndefined();
    expect(inferField('n', { x: null })).toBeUndefined();
    expect(inferField('user-id', 1)).toContain('is not a name BigQuery takes');
    expect(inferField('m', [[1]])).toContain('an array of arrays');
    expect(inferField('o', { 'bad-name': 1 })).toContain('field o.bad-name');
  });
});

describe('the evolver', () => {
  const columns: SchemaField[] = [{ name: 'id', type: 'STRING', mode: 'NULLABLE' }];
  const evolver = (perRun: number, maxColumns: number, applied: SchemaField[][]) =>
    createColumnEvolver({
      columns,
      perRun,
      maxColumns,
      apply: async (fields) => {
        applied.push([...fields]);
      },
    });

  test('adds the new fields, the first record deciding a type, and holds the batch back', async () => {
    const applied: SchemaField[][] = [];
    const e = evolver(10, 100, applied);
    await expect(
      e.evolve([
        { record: record(0, {}), fields: { price: 10, ID: 'dup' } },
        { record: record(1, {}), fields: { price: 2.5, note: 'x' } },
      ]),
    ).rejects.toThrow(PartitionWaitsError);
    // ID is the id column (BigQuery's names are case-insensitive): not added.
    expect(applied).toEqual([
      [
        { name: 'price', type: 'INT64', mode: 'NULLABLE' },
        { name: 'note', type: 'STRING', mode: 'NULLABLE' },
      ],
    ]);
    // Later in the same run, a record needing a column added meanwhile waits too (this run's writers lack it).
    await expect(e.evolve([{ record: record(2, {}), fields: { price: 3 } }])).rejects.toThrow(/next run/);
    expect(applied).toHaveLength(1);
  });

  test('the caps: per run the partitions wait; at the table total the records are dead letters', async () => {
    const applied: SchemaField[][] = [];
    const e = evolver(2, 10, applied);
    await expect(e.evolve([{ record: record(0, {}), fields: { a: 1, b: 1, c: 1 } }])).rejects.toThrow(
      PartitionWaitsError,
    );
    expect(applied.flat().map((f) => f.name)).toEqual(['a', 'b']);
    await expect(e.evolve([{ record: record(1, {}), fields: { c: 1 } }])).rejects.toThrow(
      /EVOLVE_COLUMNS_PER_RUN \(2\)/,
    );
    const full = createColumnEvolver({ columns, perRun: 10, maxColumns: 1, apply: async () => {} });
    const r = record(2, {});
    const refused = await full.evolve([{ record: r, fields: { d: 1 } }]);
    expect(refused.get(r)).toContain('EVOLVE_COLUMNS_MAX (1 columns)');
  });

  test('in classification: no evolver, a schema dead letter; with one, its refusal as the reason', async () => {
    const shape = { fields: columns, unknownFields: 'evolve' as const };
    const records = [record(0, { id: 'a', extra: 1 }), record(1, { id: 'b', empty: null, none: [] })];
    const rows: number[] = [];
    const plain = await classifyEach(records, { shape, tombstones: 'skip' }, new Date(0), (row) =>
      rows.push(row.record.offset),
    );
    expect(rows).toEqual([1]); // null and [] of a field the table lacks are left out of the row
    expect(plain.letters.map((l) => [l.kind, l.message])).toEqual([
      ['schema', 'extra: not a column of the table'],
    ]);
    const full = createColumnEvolver({ columns, perRun: 10, maxColumns: 1, apply: async () => {} });
    const judged = await classifyEach(
      records,
      { shape, tombstones: 'skip', evolve: full },
      new Date(0),
      () => {},
    );
    expect(judged.letters[0]!.message).toContain('EVOLVE_COLUMNS_MAX');
    expect(judged.letters[0]).not.toHaveProperty('newFields');
  });
});
