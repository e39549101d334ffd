import { ConfigError } from '../kernel/errors.js';
import { type CdcConfig, cdcOf } from './cdc-config.js';
import { type LoadConfig, loadOf } from './load-config.js';
import type { Reader } from './reader.js';

/** The write modes, by the names BQ_WRITE_MODE takes; each is a folder of modes/ (see modes/registry.ts). */
export const writeModeNames = ['storage-write', 'merge', 'insert-all', 'cdc', 'load'] as const;
export type WriteMode = (typeof writeModeNames)[number];

export interface BigQueryConfig {
  readonly writeMode: WriteMode;
  /** cdc mode's settings; null in the other modes. */
  readonly cdc: CdcConfig | null;
  /** load mode's settings; null in the other modes. */
  readonly load: LoadConfig | null;
  readonly location: string | null;
  readonly apiEndpoint: string | null;
  /** The Storage Write API's gRPC `host:port` of a local emulator (plaintext); null in production. */
  readonly storageEndpoint: string | null;
}

/** BQ_WRITE_MODE and its mode's settings, BQ_LOCATION, and the local emulators' endpoints. */
export function bigqueryOf(read: Reader, writeMode: WriteMode, taskCount: number): BigQueryConfig {
  const apiEndpoint = read.optional('BIGQUERY_API_ENDPOINT');
  if (apiEndpoint !== null && !/^https?:\/\/[^/]+/.test(apiEndpoint)) {
    throw new ConfigError('BIGQUERY_API_ENDPOINT', `"${apiEndpoint}" is not an http(s) URL`);
  }
  return {
    writeMode,
    cdc: writeMode === 'cdc' ? cdcOf(read) : null,
    load: writeMode === 'load' ? loadOf(read, taskCount) : null,
    location: read.optional('BQ_LOCATION'),
    apiEndpoint,
    storageEndpoint: read.matching('BIGQUERY_STORAGE_ENDPOINT', /^[^\s:/]+:\d{1,5}$/, 'host:port', true),
  };
}

export function writeModeOf(read: Reader): WriteMode {
  return read.oneOf('BQ_WRITE_MODE', writeModeNames);
}

/**
 * The write modes that route one topic into several tables (a mode's `fanOut`): the others write a topic
 * to one table by their design (cdc: a key's changes in order).
 */
export const whenWriteModes: readonly string[] = ['storage-write', 'merge', 'insert-all', 'load'];

/** The write modes that open a write stream a flush: CreateWriteStream's quota bounds a follower's linger. */
export const streamPerFlushModes: readonly string[] = ['storage-write'];

/** The write modes that cannot follow the log (DRAIN_UNTIL=budget): load makes one job a run and table. */
export const followRefusedModes: readonly string[] = ['load'];

export function whenRefusal(writeMode: string): string {
  return `routes sharing a topic by "when" need BQ_WRITE_MODE ${whenWriteModes.join(', ')} (${writeMode} writes a topic to one table)`;
}
