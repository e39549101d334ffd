/**
 * The `wide` shape as Protobuf and JSON Schema producers with a schema registry would write it, in
 * Confluent's wire format, beside Avro (avro-shape.ts): the same records, so that the bench compares the
 * drain's CPU per record across formats. Protobuf has no decimal or date: those are text, as Protobuf
 * producers send them; the timestamps are google.protobuf.Timestamp.
 */
import protobuf from 'protobufjs';
import { wide } from './shapes.js';

export const wideProto = `syntax = "proto3";
package bench;
import "google/protobuf/timestamp.proto";
message Order {
  string order_id = 1;
  int64 customer_id = 2;
  string customer_email = 3;
  string country = 4;
  string channel = 5;
  string status = 6;
  string currency = 7;
  string amount = 8;
  string tax = 9;
  string discount = 10;
  double score = 11;
  double weight_kg = 12;
  bool paid = 13;
  bool gift = 14;
  int64 quantity = 15;
  int64 sequence = 16;
  string order_date = 17;
  google.protobuf.Timestamp created_at = 18;
  google.protobuf.Timestamp updated_at = 19;
  Shipping shipping = 20;
  repeated string tags = 21;
  repeated Line lines = 22;
  string coupon = 23;
  string warehouse = 24;
  string carrier = 25;
  string notes = 26;
  int64 schema_version = 27;
  message Shipping {
    string street = 1;
    string city = 2;
    string postcode = 3;
    double latitude = 4;
    double longitude = 5;
  }
  message Line {
    string sku = 1;
    int64 units = 2;
    string price = 3;
  }
}
`;

const protoRoot = new protobuf.Root();
protoRoot.addJSON(
  (protobuf.common.get('google/protobuf/timestamp.proto') as { nested: protobuf.INamespace['nested'] })
    .nested ?? {},
);
protobuf.parse(wideProto, protoRoot, { keepCase: true });
protoRoot.resolveAll();
const Order = protoRoot.lookupType('bench.Order');

function header(schemaId: number, extra: number[] = []): Buffer {
  const out = Buffer.alloc(5);
  out.writeUInt32BE(schemaId, 1);
  return Buffer.concat([out, Buffer.from(extra)]);
}

/** Record i of the wide shape as Protobuf, framed with the wire format's header and message index [0]. */
export function wideProtobufValue(i: number, schemaId: number): Buffer {
  const v = JSON.parse(wide.value(i));
  const timestamp = (iso: string) => {
    const ms = Date.parse(iso);
    return { seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1_000_000 };
  };
  const body = Order.encode(
    Order.fromObject({
      ...v,
      coupon: v.coupon ?? '',
      created_at: timestamp(v.created_at),
      updated_at: timestamp(v.updated_at),
    }),
  ).finish();
  return Buffer.concat([header(schemaId, [0]), body]);
}

const nullable = (type: string, format?: string) => ({
  type: [type, 'null'],
  ...(format === undefined ? {} : { format }),
});

export const wideJsonSchema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  title: 'Order',
  type: 'object',
  required: ['order_id'],
  properties: {
    order_id: { type: 'string' },
    customer_id: nullable('integer'),
    customer_email: nullable('string'),
    country: nullable('string'),
    channel: nullable('string'),
    status: nullable('string'),
    currency: nullable('string'),
    amount: nullable('string'),
    tax: nullable('string'),
    discount: nullable('string'),
    score: nullable('number'),
    weight_kg: nullable('number'),
    paid: nullable('boolean'),
    gift: nullable('boolean'),
    quantity: nullable('integer'),
    sequence: nullable('integer'),
    order_date: nullable('string', 'date'),
    created_at: nullable('string', 'date-time'),
    updated_at: nullable('string', 'date-time'),
    shipping: {
      type: ['object', 'null'],
      properties: {
        street: nullable('string'),
        city: nullable('string'),
        postcode: nullable('string'),
        latitude: nullable('number'),
        longitude: nullable('number'),
      },
    },
    tags: { type: 'array', items: { type: 'string' } },
    lines: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          sku: nullable('string'),
          units: nullable('integer'),
          price: nullable('string'),
        },
      },
    },
    coupon: nullable('string'),
    warehouse: nullable('string'),
    carrier: nullable('string'),
    notes: nullable('string'),
    schema_version: nullable('integer'),
  },
};

/** Record i of the wide shape as JSON Schema's serializer frames it: the header, then the JSON text. */
export function wideJsonSchemaValue(i: number, schemaId: number): Buffer {
  return Buffer.concat([header(schemaId), Buffer.from(wide.value(i))]);
}
