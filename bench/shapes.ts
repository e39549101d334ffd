/**
 * The benchmark's record shapes. `wide` (the default) looks like production data: 27 columns of every
 * common type (strings, INT64, NUMERIC, FLOAT64, BOOL, DATE, two TIMESTAMPs, a nested RECORD of 5 fields,
 * a REPEATED STRING, a REPEATED RECORD of 3 fields), about 780 bytes of JSON. `narrow` is the old 3-field
 * record of about 1 KB (one long string).
 */
export interface Shape {
  readonly name: 'wide' | 'narrow' | 'small';
  readonly schema: readonly { name: string; type: string; mode?: string; fields?: unknown[] }[];
  value(i: number): string;
}

const wideSchema = [
  { name: 'order_id', type: 'STRING', mode: 'REQUIRED' },
  { name: 'customer_id', type: 'INT64' },
  { name: 'customer_email', type: 'STRING' },
  { name: 'country', type: 'STRING' },
  { name: 'channel', type: 'STRING' },
  { name: 'status', type: 'STRING' },
  { name: 'currency', type: 'STRING' },
  { name: 'amount', type: 'NUMERIC' },
  { name: 'tax', type: 'NUMERIC' },
  { name: 'discount', type: 'NUMERIC' },
  { name: 'score', type: 'FLOAT64' },
  { name: 'weight_kg', type: 'FLOAT64' },
  { name: 'paid', type: 'BOOL' },
  { name: 'gift', type: 'BOOL' },
  { name: 'quantity', type: 'INT64' },
  { name: 'sequence', type: 'INT64' },
  { name: 'order_date', type: 'DATE' },
  { name: 'created_at', type: 'TIMESTAMP' },
  { name: 'updated_at', type: 'TIMESTAMP' },
  {
    name: 'shipping',
    type: 'RECORD',
    fields: [
      { name: 'street', type: 'STRING' },
      { name: 'city', type: 'STRING' },
      { name: 'postcode', type: 'STRING' },
      { name: 'latitude', type: 'FLOAT64' },
      { name: 'longitude', type: 'FLOAT64' },
    ],
  },
  { name: 'tags', type: 'STRING', mode: 'REPEATED' },
  {
    name: 'lines',
    type: 'RECORD',
    mode: 'REPEATED',
    fields: [
      { name: 'sku', type: 'STRING' },
      { name: 'units', type: 'INT64' },
      { name: 'price', type: 'NUMERIC' },
    ],
  },
  { name: 'coupon', type: 'STRING' },
  { name: 'warehouse', type: 'STRING' },
  { name: 'carrier', type: 'STRING' },
  { name: 'notes', type: 'STRING' },
  { name: 'schema_version', type: 'INT64' },
];

const countries = ['DE', 'FR', 'GB', 'US', 'JP', 'BR', 'IN', 'ES'];
const statuses = ['created', 'paid', 'packed', 'shipped', 'delivered'];

function wideValue(i: number): string {
  const at = Date.UTC(2026, 10, 1) + i * 1_337;
  return JSON.stringify({
    order_id: `ord-${String(i).padStart(10, '0')}`,
    customer_id: 100_000 + (i % 50_000),
    customer_email: `customer${i % 50_000}@example.com`,
    country: countries[i % countries.length],
    channel: i % 3 === 0 ? 'web' : i % 3 === 1 ? 'app' : 'store',
    status: statuses[i % statuses.length],
    currency: 'EUR',
    amount: `${(i % 10_000) + 10}.${String(i % 100).padStart(2, '0')}`,
    tax: `${(i % 1_000) + 1}.19`,
    discount: i % 4 === 0 ? '5.00' : '0.00',
    score: (i % 1000) / 7,
    weight_kg: 0.25 + (i % 40) / 8,
    paid: i % 2 === 0,
    gift: i % 11 === 0,
    quantity: 1 + (i % 9),
    sequence: i,
    order_date: new Date(at).toISOString().slice(0, 10),
    created_at: new Date(at).toISOString(),
    updated_at: new Date(at + 60_000).toISOString(),
    shipping: {
      street: `${1 + (i % 200)} Market Street`,
      city: ['Berlin', 'Paris', 'London', 'Austin'][i % 4],
      postcode: String(10_000 + (i % 89_999)),
      latitude: 52.52 + (i % 100) / 1000,
      longitude: 13.405 - (i % 100) / 1000,
    },
    tags: ['priority', `batch-${i % 17}`, i % 2 === 0 ? 'returning' : 'new'],
    lines: [
      { sku: `sku-${i % 997}`, units: 1 + (i % 3), price: '19.99' },
      { sku: `sku-${(i + 7) % 997}`, units: 2, price: '4.50' },
    ],
    coupon: i % 5 === 0 ? `SAVE${i % 30}` : null,
    warehouse: `wh-${i % 12}`,
    carrier: ['dhl', 'ups', 'dpd'][i % 3],
    notes: 'Leave the parcel at the front desk.',
    schema_version: 3,
  });
}

export const wide: Shape = { name: 'wide', schema: wideSchema, value: wideValue };

const pad = 'x'.repeat(960);
export const narrow: Shape = {
  name: 'narrow',
  schema: [
    { name: 'id', type: 'STRING' },
    { name: 'n', type: 'INT64' },
    { name: 'note', type: 'STRING' },
  ],
  value: (i) => JSON.stringify({ id: `r${i}`, n: i, note: pad }),
};

export function shapeNamed(name: string | undefined): Shape {
  if (name === undefined || name === 'wide') return wide;
  if (name === 'narrow') return narrow;
  if (name === 'small') return small;
  throw new Error(`BENCH_SHAPE=${name}: wide, narrow or small`);
}

/** `small`: an event of about 200 bytes of JSON (the load bench's million records). */
export const small: Shape = {
  name: 'small',
  schema: [
    { name: 'event_id', type: 'STRING', mode: 'REQUIRED' },
    { name: 'user_id', type: 'INT64' },
    { name: 'kind', type: 'STRING' },
    { name: 'path', type: 'STRING' },
    { name: 'country', type: 'STRING' },
    { name: 'amount', type: 'NUMERIC' },
    { name: 'at', type: 'TIMESTAMP' },
    { name: 'ok', type: 'BOOL' },
  ],
  value: (i) =>
    JSON.stringify({
      event_id: `evt-${String(i).padStart(12, '0')}`,
      user_id: 100_000 + (i % 70_000),
      kind: ['page_view', 'add_to_cart', 'checkout'][i % 3],
      path: `/products/${i % 5_000}/reviews?page=${i % 7}`,
      country: countries[i % countries.length],
      amount: `${i % 1_000}.${String(i % 100).padStart(2, '0')}`,
      at: new Date(Date.UTC(2026, 10, 1) + i * 13).toISOString(),
      ok: i % 5 !== 0,
    }),
};
