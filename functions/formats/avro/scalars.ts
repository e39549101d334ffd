/**
 * The Avro types the compiled path writes as one value (avro/plans.ts): primitives, logical types and
 * Debezium's semantic types, each with the column types it goes onto and its wire type in the row.
 */
import type { Temporal } from './read.js';
import { primitives as primitiveMappings } from './types.js';

export type Scalar =
  | 'boolean'
  | 'int'
  | 'long'
  | 'float'
  | 'double'
  | 'string'
  | 'bytes'
  | 'date'
  /** Debezium's `ZonedTimestamp`: ISO-8601 text; compiled where it is canonical UTC (`…Z`), as JSON's is. */
  | 'zoned'
  /** Debezium's `Json`: JSON text onto a JSON column, copied as it is where it parses. */
  | 'json'
  | Temporal;

/** Avro's primitive types but null. */
export const primitives = Object.keys(primitiveMappings);

export const columnTypes: Record<Scalar, readonly string[]> = {
  boolean: ['BOOL', 'BOOLEAN'],
  int: ['INT64', 'INTEGER'],
  long: ['INT64', 'INTEGER'],
  float: ['FLOAT64', 'FLOAT'],
  double: ['FLOAT64', 'FLOAT'],
  string: ['STRING'],
  bytes: ['BYTES'],
  date: ['DATE'],
  zoned: ['TIMESTAMP'],
  json: ['JSON'],
  millis: ['TIMESTAMP'],
  micros: ['TIMESTAMP'],
  nanos: ['TIMESTAMP'],
  'local-millis': ['DATETIME'],
  'local-micros': ['DATETIME'],
  'local-nanos': ['DATETIME'],
  'time-millis': ['TIME'],
  'time-micros': ['TIME'],
  'time-millis-6': ['TIME'],
  'time-nanos': ['TIME'],
};

export const wireOf: Record<Scalar, number> = {
  boolean: 0,
  int: 0,
  long: 0,
  float: 1,
  double: 1,
  string: 2,
  bytes: 2,
  date: 0,
  zoned: 0,
  json: 2,
  millis: 0,
  micros: 0,
  nanos: 0,
  'local-millis': 2,
  'local-micros': 2,
  'local-nanos': 2,
  'time-millis': 2,
  'time-micros': 2,
  'time-millis-6': 2,
  'time-nanos': 2,
};

export function scalarOf(type: unknown): Scalar | undefined {
  if (typeof type === 'string') return primitives.includes(type) ? (type as Scalar) : undefined;
  if (type === null || typeof type !== 'object') return undefined;
  const { type: base, logicalType } = type as { type?: unknown; logicalType?: unknown };
  const connect = (type as Record<string, unknown>)['connect.name'];
  if (logicalType === undefined && typeof connect === 'string' && connect.startsWith('io.debezium.'))
    return debeziumKinds[`${connect} ${String(base)}`];
  if (logicalType === undefined) return scalarOf(base);
  if (logicalType === 'date' && base === 'int') return 'date';
  if (logicalType === 'timestamp-millis' && base === 'long') return 'millis';
  if (logicalType === 'timestamp-micros' && base === 'long') return 'micros';
  if (logicalType === 'time-millis' && base === 'int') return 'time-millis';
  if (logicalType === 'time-micros' && base === 'long') return 'time-micros';
  const temporal = temporalOf[logicalType as string];
  if (temporal !== undefined && base === 'long') return temporal;
  if (logicalType === 'uuid' && base === 'string') return 'string';
  return undefined;
}

/**
 * Debezium's semantic types (a plain Avro type and a `connect.name`, avro/types.ts's connectMapping) whose
 * values the general path writes as one of the kinds above writes them: days, epoch milliseconds and
 * microseconds as DATETIME, milli-, micro- and nanoseconds of the day (`Time`'s text with six decimals
 * where Avro's `time-millis` has three), a `ZonedTimestamp` in UTC, a UUID's text, `Json`'s text. The
 * rest of Debezium's names (`VariableScaleDecimal`) take the general path.
 */
const debeziumKinds: Record<string, Scalar> = {
  'io.debezium.time.Date int': 'date',
  'io.debezium.time.Timestamp long': 'local-millis',
  'io.debezium.time.MicroTimestamp long': 'local-micros',
  'io.debezium.time.NanoTimestamp long': 'local-nanos',
  'io.debezium.time.Time int': 'time-millis-6',
  'io.debezium.time.MicroTime long': 'time-micros',
  'io.debezium.time.NanoTime long': 'time-nanos',
  'io.debezium.time.ZonedTimestamp string': 'zoned',
  'io.debezium.data.Uuid string': 'string',
  'io.debezium.data.Json string': 'json',
};

/** The timestamps on a long beyond the two above. */
const temporalOf: Record<string, Temporal> = {
  'timestamp-nanos': 'nanos',
  'local-timestamp-millis': 'local-millis',
  'local-timestamp-micros': 'local-micros',
  'local-timestamp-nanos': 'local-nanos',
};
