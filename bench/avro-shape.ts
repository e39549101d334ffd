/**
 * The `wide` shape as a producer with a schema registry would write it: Avro in Confluent's wire format
 * (decimals as bytes, dates as days, timestamps as microseconds), so that the bench compares the drain's
 * CPU per record on the same data as JSON and as Avro.
 */
import avro from 'avsc';
import { wide } from './shapes.js';

const decimal = (precision: number, scale: number) => ({
  type: 'bytes',
  logicalType: 'decimal',
  precision,
  scale,
});
const optional = (type: unknown) => ({ type: ['null', type], default: null });

export const wideAvroSchema = {
  type: 'record',
  name: 'Order',
  namespace: 'bench',
  fields: [
    { name: 'order_id', type: 'string' },
    { name: 'customer_id', ...optional('long') },
    { name: 'customer_email', ...optional('string') },
    { name: 'country', ...optional('string') },
    { name: 'channel', ...optional('string') },
    { name: 'status', ...optional('string') },
    { name: 'currency', ...optional('string') },
    { name: 'amount', ...optional(decimal(18, 2)) },
    { name: 'tax', ...optional(decimal(18, 2)) },
    { name: 'discount', ...optional(decimal(18, 2)) },
    { name: 'score', ...optional('double') },
    { name: 'weight_kg', ...optional('double') },
    { name: 'paid', ...optional('boolean') },
    { name: 'gift', ...optional('boolean') },
    { name: 'quantity', ...optional('long') },
    { name: 'sequence', ...optional('long') },
    { name: 'order_date', ...optional({ type: 'int', logicalType: 'date' }) },
    { name: 'created_at', ...optional({ type: 'long', logicalType: 'timestamp-micros' }) },
    { name: 'updated_at', ...optional({ type: 'long', logicalType: 'timestamp-micros' }) },
    {
      name: 'shipping',
      ...optional({
        type: 'record',
        name: 'Shipping',
        fields: [
          { name: 'street', type: 'string' },
          { name: 'city', type: 'string' },
          { name: 'postcode', type: 'string' },
          { name: 'latitude', type: 'double' },
          { name: 'longitude', type: 'double' },
        ],
      }),
    },
    { name: 'tags', type: { type: 'array', items: 'string' } },
    {
      name: 'lines',
      type: {
        type: 'array',
        items: {
          type: 'record',
          name: 'Line',
          fields: [
            { name: 'sku', type: 'string' },
            { name: 'units', type: 'long' },
            { name: 'price', type: decimal(18, 2) },
          ],
        },
      },
    },
    { name: 'coupon', ...optional('string') },
    { name: 'warehouse', ...optional('string') },
    { name: 'carrier', ...optional('string') },
    { name: 'notes', ...optional('string') },
    { name: 'schema_version', ...optional('long') },
  ],
};

const type = avro.Type.forSchema(wideAvroSchema as avro.Schema);

/** Decimal text of scale 2 → the unscaled value as big-endian two's complement. */
function cents(text: string): Buffer {
  const unscaled = BigInt(text.replace('.', ''));
  const hex = unscaled.toString(16);
  return Buffer.from(hex.length % 2 === 0 ? `00${hex}` : `0${hex}`, 'hex');
}

/** Record i of the wide shape as Avro binary, framed with the wire format's header for `schemaId`. */
export function wideAvroValue(i: number, schemaId: number): Buffer {
  const v = JSON.parse(wide.value(i));
  const micros = (iso: string) => Date.parse(iso) * 1000;
  const body = type.toBuffer({
    ...v,
    amount: cents(v.amount),
    tax: cents(v.tax),
    discount: cents(v.discount),
    order_date: Math.floor(Date.parse(v.order_date) / 86_400_000),
    created_at: micros(v.created_at),
    updated_at: micros(v.updated_at),
    lines: v.lines.map((l: { sku: string; units: number; price: string }) => ({
      ...l,
      price: cents(l.price),
    })),
  });
  const header = Buffer.alloc(5);
  header.writeUInt32BE(schemaId, 1);
  return Buffer.concat([header, body]);
}
