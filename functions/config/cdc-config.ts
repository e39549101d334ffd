import { ConfigError } from '../kernel/errors.js';
import type { Reader } from './reader.js';

/** cdc mode: how records are changes, by which key, and the tables' max staleness. */
export interface CdcConfig {
  readonly changeFormat: 'debezium' | 'upsert';
  /** Empty: the record key's fields (Debezium), or the existing table's primary key. */
  readonly primaryKey: readonly string[];
  /** BigQuery's max_staleness as its INTERVAL text, or null (none: every query applies what is pending). */
  readonly maxStaleness: string | null;
  /** The optional columns _cdc_op, _cdc_source_ts, _cdc_source_position. */
  readonly sourceColumns: boolean;
}

/** cdc mode: CHANGE_FORMAT, BQ_PRIMARY_KEY, BQ_MAX_STALENESS, CDC_SOURCE_COLUMNS. */
export function cdcOf(read: Reader): CdcConfig {
  const changeFormat = read.oneOf('CHANGE_FORMAT', ['debezium', 'upsert'], null);
  if (changeFormat === null)
    throw new ConfigError('CHANGE_FORMAT', 'is required with BQ_WRITE_MODE=cdc: debezium or upsert');
  const keyText = read.optional('BQ_PRIMARY_KEY');
  const primaryKey =
    keyText === null ? [] : read.list('BQ_PRIMARY_KEY', /^[A-Za-z_][A-Za-z0-9_]{0,299}$/, 'column names');
  if (primaryKey.length > 16)
    throw new ConfigError('BQ_PRIMARY_KEY', 'BigQuery takes at most 16 primary key columns');
  if (changeFormat === 'upsert' && primaryKey.length === 0)
    throw new ConfigError(
      'BQ_PRIMARY_KEY',
      'is required with CHANGE_FORMAT=upsert (the key columns a null value deletes)',
    );
  return {
    changeFormat,
    primaryKey,
    maxStaleness: stalenessOf(read.text('BQ_MAX_STALENESS')),
    sourceColumns: read.oneOf('CDC_SOURCE_COLUMNS', ['true', 'false']) === 'true',
  };
}

/** `15m`, `2h`, `90s`, `0` → BigQuery's INTERVAL text for max_staleness (`0-0 0 0:15:0`); 0 → none. */
export function stalenessOf(text: string): string | null {
  const match = /^(\d{1,6})([smh]?)$/.exec(text.trim());
  if (match === null)
    throw new ConfigError('BQ_MAX_STALENESS', `"${text}" is not a duration such as 15m, 2h, 90s or 0`);
  const seconds = Number(match[1]) * ({ s: 1, m: 60, h: 3600 } as Record<string, number>)[match[2] || 's']!;
  if (seconds === 0) return null;
  if (seconds > 24 * 3600) throw new ConfigError('BQ_MAX_STALENESS', 'must be at most 24h');
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  return `0-0 0 ${h}:${m}:${seconds % 60}`;
}
