import protobuf from 'protobufjs';
import { describe, expect, test } from 'vitest';
import { compileProtobuf } from '../../functions/formats/protobuf/schema.js';
import type { RegisteredSchema, SchemaRegistry } from '../../functions/formats/schema-registry.js';

const proto = `
syntax = "proto3";
package shop.v1;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
import "google/protobuf/struct.proto";
import "common.proto";

message Order {
  int64 id = 1;
  uint64 big = 2;
  sint32 delta = 3;
  double score = 4;
  float ratio = 5;
  bool paid = 6;
  string name = 7;
  bytes blob = 8;
  Status status = 9;
  google.protobuf.Timestamp at = 10;
  google.protobuf.Int64Value maybe = 11;
  google.protobuf.StringValue label = 12;
  google.protobuf.Struct extra = 13;
  map<string, int64> counts = 14;
  map<int64, string> names = 15;
  repeated string tags = 16;
  repeated Line lines = 17;
  oneof payment { string card = 18; int32 voucher = 19; }
  optional string note = 20;
  common.Money total = 21;
  message Line { string sku = 1; int32 qty = 2; }
}
enum Status { NEW = 0; PAID = 1; }
message Refund { int64 order_id = 1; }
`;
const common = 'syntax = "proto3"; package common; message Money { string currency = 1; int64 units = 2; }';

const registry: SchemaRegistry = {
  schemaById: async () => {
    throw new Error('not used');
  },
  subjectVersion: async (subject, version) => {
    expect([subject, version]).toEqual(['common.proto', 1]);
    return { id: 9, version: 1, schemaType: 'PROTOBUF', schema: common, references: [] };
  },
};
const registered: RegisteredSchema = {
  id: 10,
  schemaType: 'PROTOBUF',
  schema: proto,
  references: [{ name: 'common.proto', subject: 'common.proto', version: 1 }],
};

/** The same schema through protobufjs as a producer would (its own root). */
function encoder() {
  const root = new protobuf.Root();
  for (const f of [
    'google/protobuf/timestamp.proto',
    'google/protobuf/wrappers.proto',
    'google/protobuf/struct.proto',
  ])
    root.addJSON((protobuf.common.get(f) as { nested: protobuf.INamespace['nested'] }).nested!);
  protobuf.parse(common, root, { keepCase: true });
  protobuf.parse(proto, root, { keepCase: true });
  root.resolveAll();
  return root;
}

/** Confluent's message-index prefix: [0] is one 0 byte; others are a count and the indexes, zigzag. */
function indexes(list: number[]): Buffer {
  if (list.length === 1 && list[0] === 0) return Buffer.from([0]);
  return Buffer.from([list.length * 2, ...list.map((i) => i * 2)]);
}

describe('Protobuf → BigQuery', () => {
  test('columns: scalars, enums by name, well-known types, maps, repeated, oneof, nested and imported messages', async () => {
    const compiled = await compileProtobuf(registered, registry);
    const byName = Object.fromEntries(compiled.fields.map((f) => [f.name, f]));
    expect(byName.id).toEqual({ name: 'id', type: 'INT64', mode: 'NULLABLE' });
    expect(byName.big!.type).toBe('NUMERIC');
    expect(byName.delta!.type).toBe('INT64');
    expect(byName.score!.type).toBe('FLOAT64');
    expect(byName.paid!.type).toBe('BOOL');
    expect(byName.blob!.type).toBe('BYTES');
    expect(byName.status!.type).toBe('STRING');
    expect(byName.at!.type).toBe('TIMESTAMP');
    expect(byName.maybe).toEqual({ name: 'maybe', type: 'INT64', mode: 'NULLABLE' });
    expect(byName.label!.type).toBe('STRING');
    expect(byName.extra!.type).toBe('JSON');
    expect(byName.counts).toEqual({
      name: 'counts',
      type: 'RECORD',
      mode: 'REPEATED',
      fields: [
        { name: 'key', type: 'STRING', mode: 'NULLABLE' },
        { name: 'value', type: 'INT64', mode: 'NULLABLE' },
      ],
    });
    expect(byName.tags).toEqual({ name: 'tags', type: 'STRING', mode: 'REPEATED' });
    expect(byName.lines!.fields!.map((f) => f.name)).toEqual(['sku', 'qty']);
    expect(byName.card!.mode).toBe('NULLABLE');
    expect(byName.total!.fields!.map((f) => `${f.name}:${f.type}`)).toEqual([
      'currency:STRING',
      'units:INT64',
    ]);
  });

  test('values: exact, enums by name, unset presence fields null, proto3 defaults kept', async () => {
    const compiled = await compileProtobuf(registered, registry);
    const Order = encoder().lookupType('shop.v1.Order');
    const message = Order.fromObject({
      id: '9007199254740993',
      big: '18446744073709551615',
      delta: -3,
      score: 1.5,
      name: 'x',
      blob: Buffer.from([1, 2]),
      status: 'PAID',
      at: { seconds: 1_709_209_845, nanos: 123_456_789 },
      maybe: { value: 0 },
      extra: {
        fields: {
          a: { numberValue: 1 },
          b: { listValue: { values: [{ stringValue: 's' }, { boolValue: true }] } },
        },
      },
      counts: { a: 1 },
      names: { '-5': 'minus five' },
      tags: ['t1', 't2'],
      lines: [{ sku: 's1', qty: 2 }],
      voucher: 7,
      total: { currency: 'EUR', units: 12 },
    });
    const payload = Buffer.concat([indexes([0]), Buffer.from(Order.encode(message).finish())]);
    expect(compiled.decode(payload)).toEqual({
      id: '9007199254740993',
      big: '18446744073709551615',
      delta: -3,
      score: 1.5,
      ratio: 0,
      paid: false,
      name: 'x',
      blob: 'AQI=',
      status: 'PAID',
      at: '2024-02-29T12:30:45.123456Z',
      maybe: 0,
      label: null,
      extra: '{"a":1,"b":["s",true]}',
      counts: [{ key: 'a', value: 1 }],
      names: [{ key: -5, value: 'minus five' }],
      tags: ['t1', 't2'],
      lines: [{ sku: 's1', qty: 2 }],
      card: null,
      voucher: 7,
      note: null,
      total: { currency: 'EUR', units: 12 },
    });
  });

  test('the message index picks the message; one that names none is a decode error', async () => {
    const compiled = await compileProtobuf(registered, registry);
    const Refund = encoder().lookupType('shop.v1.Refund');
    const payload = Buffer.concat([
      indexes([1]),
      Buffer.from(Refund.encode(Refund.fromObject({ order_id: 4 })).finish()),
    ]);
    expect(compiled.decode(payload)).toEqual({ order_id: 4 });
    expect(() => compiled.decode(Buffer.concat([indexes([5]), Buffer.from([])]))).toThrow(/names no message/);
    const nested = encoder().lookupType('shop.v1.Order.Line');
    const line = Buffer.concat([
      indexes([0, 0]),
      Buffer.from(nested.encode(nested.fromObject({ sku: 'a', qty: 1 })).finish()),
    ]);
    expect(compiled.decode(line)).toEqual({ sku: 'a', qty: 1 });
  });

  test('bytes that are no message of the schema are a decode error', async () => {
    const compiled = await compileProtobuf(registered, registry);
    expect(() => compiled.decode(Buffer.from([0, 0x0a, 0xff]))).toThrow(/not a Protobuf Order/);
  });

  test('a recursive message cannot be columns', async () => {
    const recursive = {
      ...registered,
      references: [],
      schema: 'syntax = "proto3"; message Node { Node next = 1; }',
    };
    await expect(compileProtobuf(recursive, registry)).rejects.toThrow(/recursive/);
  });
});
