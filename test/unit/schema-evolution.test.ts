import { describe, expect, test } from 'vitest';
import { compareSchemas, mergeSchemas } from '../../functions/schema/compare.js';
import type { SchemaField } from '../../functions/schema/table-schema.js';

const table: SchemaField[] = [
  { name: 'id', type: 'STRING', mode: 'REQUIRED' },
  { name: 'n', type: 'INTEGER' },
  {
    name: 'order',
    type: 'RECORD',
    fields: [
      { name: 'sku', type: 'STRING', mode: 'REQUIRED' },
      { name: 'lines', type: 'RECORD', mode: 'REPEATED', fields: [{ name: 'qty', type: 'INT64' }] },
    ],
  },
];

const withChanges = (change: (fields: SchemaField[]) => void): SchemaField[] => {
  const copy = structuredClone(table);
  change(copy);
  return copy;
};

describe('compareSchemas', () => {
  test('the same schema (type aliases and mode defaults included) needs nothing', () => {
    const same = withChanges((f) => {
      f[1]!.type = 'INT64';
      f[1]!.mode = 'NULLABLE';
      f[2]!.type = 'STRUCT';
    });
    expect(compareSchemas(table, same)).toEqual({ changes: [], refused: [] });
  });

  test('new NULLABLE and REPEATED columns, top level and nested, and REQUIRED → NULLABLE are changes', () => {
    const wanted = withChanges((f) => {
      f[0]!.mode = 'NULLABLE';
      f.push({ name: 'email', type: 'STRING' }, { name: 'tags', type: 'STRING', mode: 'REPEATED' });
      f[2]!.fields!.push({ name: 'note', type: 'STRING', mode: 'NULLABLE' });
      f[2]!.fields![1]!.fields!.push({ name: 'price', type: 'NUMERIC' });
      f[2]!.fields![0]!.mode = 'NULLABLE';
    });
    const { changes, refused } = compareSchemas(table, wanted);
    expect(refused).toEqual([]);
    expect(changes.map((c) => `${c.kind} ${c.column}`).sort()).toEqual([
      'add email',
      'add order.lines.price',
      'add order.note',
      'add tags',
      'relax id',
      'relax order.sku',
    ]);
  });

  test.each([
    [
      'a removed column',
      (f: SchemaField[]): void => {
        f.splice(1, 1);
      },
      'n',
      'removed',
    ],
    [
      'a type change',
      (f: SchemaField[]): void => {
        f[1]!.type = 'STRING';
      },
      'n',
      'type',
    ],
    [
      'a nested type change',
      (f: SchemaField[]): void => {
        f[2]!.fields![0]!.type = 'INT64';
      },
      'order.sku',
      'type',
    ],
    [
      'a new REQUIRED column',
      (f: SchemaField[]): void => {
        f.push({ name: 'must', type: 'STRING', mode: 'REQUIRED' });
      },
      'must',
      'required-added',
    ],
    [
      'NULLABLE → REQUIRED',
      (f: SchemaField[]): void => {
        f[1]!.mode = 'REQUIRED';
      },
      'n',
      'mode',
    ],
    [
      'NULLABLE → REPEATED',
      (f: SchemaField[]): void => {
        f[1]!.mode = 'REPEATED';
      },
      'n',
      'mode',
    ],
    [
      'a nested removed column',
      (f: SchemaField[]): void => {
        f[2]!.fields![1]!.fields!.pop();
      },
      'order.lines.qty',
      'removed',
    ],
  ] as const)('%s is refused, naming the column and the change', (_name, change, column, kind) => {
    const { refused } = compareSchemas(table, withChanges(change as (f: SchemaField[]) => void));
    expect(refused).toEqual([expect.objectContaining({ column, change: kind })]);
    expect(refused[0]!.message).toContain(column);
  });

  test('column names compare case-insensitively, as in BigQuery', () => {
    const wanted = withChanges((f) => {
      f[1]!.name = 'N';
    });
    expect(compareSchemas(table, wanted)).toEqual({ changes: [], refused: [] });
  });
});

describe('mergeSchemas', () => {
  test('keeps the table’s columns in their order, relaxes, nests the new fields, appends new columns', () => {
    const wanted = withChanges((f) => {
      f.unshift({ name: 'first', type: 'STRING' });
      f[1]!.mode = 'NULLABLE';
      f[3]!.fields![1]!.fields!.push({ name: 'price', type: 'NUMERIC' });
    });
    const evolved = mergeSchemas(table, wanted);
    expect(evolved.map((f) => f.name)).toEqual(['id', 'n', 'order', 'first']);
    expect(evolved[0]!.mode).toBe('NULLABLE');
    expect(evolved[2]!.fields![1]!.fields!.map((f) => f.name)).toEqual(['qty', 'price']);
    expect(compareSchemas(evolved, wanted)).toEqual({ changes: [], refused: [] });
  });
});
