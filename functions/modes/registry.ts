/**
 * The write modes by the name BQ_WRITE_MODE gives them: the one place that maps a name to its folder. The
 * job, the CLI and the config ask a mode through here; adding a mode is a folder and a line.
 */
import type { WriteMode } from '../config/bigquery.js';
import { ConfigError } from '../kernel/errors.js';
import { cdcMode } from './cdc/index.js';
import { insertAllMode } from './insert-all/index.js';
import { loadMode } from './load/index.js';
import { mergeMode } from './merge/index.js';
import { storageWriteMode } from './storage-write/index.js';
import type { WriteModeDefinition } from './write-mode.js';

const writeModes: Readonly<Record<WriteMode, WriteModeDefinition>> = {
  'storage-write': storageWriteMode,
  merge: mergeMode,
  'insert-all': insertAllMode,
  cdc: cdcMode,
  load: loadMode,
};

/** The mode of that name; a name it does not know is a configuration error naming BQ_WRITE_MODE. */
export function writeModeNamed(name: string): WriteModeDefinition {
  if (!Object.hasOwn(writeModes, name))
    throw new ConfigError('BQ_WRITE_MODE', `"${name}" is not one of ${Object.keys(writeModes).join(', ')}`);
  return writeModes[name as WriteMode];
}
