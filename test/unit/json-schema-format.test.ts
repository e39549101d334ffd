import { describe, expect, test } from 'vitest';
import { compileJsonSchema } from '../../functions/formats/json-schema/schema.js';

const schema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  title: 'Order',
  type: 'object',
  required: ['id', 'at'],
  properties: {
    id: { type: 'integer' },
    at: { type: 'string', format: 'date-time' },
    day: { type: 'string', format: 'date' },
    time: { type: 'string', format: 'time' },
    note: { type: ['string', 'null'] },
    score: { type: 'number' },
    paid: { type: 'boolean' },
    tags: { type: 'array', items: { type: 'string' } },
    address: { $ref: '#/definitions/Address' },
    billing: { oneOf: [{ type: 'null' }, { $ref: '#/definitions/Address' }] },
    extra: { type: 'object' },
    grid: { type: 'array', items: { type: 'array', items: { type: 'integer' } } },
    either: { anyOf: [{ type: 'string' }, { type: 'integer' }] },
  },
  definitions: {
    Address: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

describe('JSON Schema → BigQuery', () => {
  const compiled = compileJsonSchema(JSON.stringify(schema));

  test('columns: types, formats, required and nullable, $ref, nested, arrays, free-form objects as JSON', () => {
    expect(compiled.fields).toEqual([
      { name: 'id', type: 'INT64', mode: 'REQUIRED' },
      { name: 'at', type: 'TIMESTAMP', mode: 'REQUIRED' },
      { name: 'day', type: 'DATE', mode: 'NULLABLE' },
      { name: 'time', type: 'TIME', mode: 'NULLABLE' },
      { name: 'note', type: 'STRING', mode: 'NULLABLE' },
      { name: 'score', type: 'FLOAT64', mode: 'NULLABLE' },
      { name: 'paid', type: 'BOOL', mode: 'NULLABLE' },
      { name: 'tags', type: 'STRING', mode: 'REPEATED' },
      {
        name: 'address',
        type: 'RECORD',
        mode: 'NULLABLE',
        fields: [{ name: 'city', type: 'STRING', mode: 'REQUIRED' }],
      },
      {
        name: 'billing',
        type: 'RECORD',
        mode: 'NULLABLE',
        fields: [{ name: 'city', type: 'STRING', mode: 'REQUIRED' }],
      },
      { name: 'extra', type: 'JSON', mode: 'NULLABLE' },
      {
        name: 'grid',
        type: 'RECORD',
        mode: 'REPEATED',
        fields: [{ name: 'value', type: 'INT64', mode: 'REPEATED' }],
      },
      { name: 'either', type: 'JSON', mode: 'NULLABLE' },
    ]);
  });

  test('values: named properties only, free-form ones as JSON text, nested arrays wrapped', () => {
    const value = {
      id: 1,
      at: '2024-02-29T12:30:45.123456+02:00',
      tags: ['a'],
      address: { city: 'Oslo' },
      extra: { any: [1, { b: true }] },
      grid: [[1], []],
      either: 5,
      unnamed: 'dropped',
    };
    expect(compiled.decode(Buffer.from(JSON.stringify(value)))).toEqual({
      id: 1,
      at: '2024-02-29T12:30:45.123456+02:00',
      day: null,
      time: null,
      note: null,
      score: null,
      paid: null,
      tags: ['a'],
      address: { city: 'Oslo' },
      billing: null,
      extra: '{"any":[1,{"b":true}]}',
      grid: [{ value: [1] }, { value: [] }],
      either: '5',
    });
  });

  test('a payload that is no JSON object is a decode error', () => {
    expect(() => compiled.decode(Buffer.from('{broken'))).toThrow(/value is not JSON/);
    expect(() => compiled.decode(Buffer.from('[1]'))).toThrow(/not a JSON object/);
  });

  test('a schema that is no object with properties, or recursive, cannot be columns', () => {
    expect(() => compileJsonSchema('{"type":"string"}')).toThrow(/not an object with properties/);
    const recursive = {
      type: 'object',
      properties: { next: { $ref: '#/definitions/Node' } },
      definitions: { Node: { type: 'object', properties: { next: { $ref: '#/definitions/Node' } } } },
    };
    expect(() => compileJsonSchema(JSON.stringify(recursive))).toThrow(/recursive/);
  });
});
