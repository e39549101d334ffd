import { describe, expect, test } from 'vitest';
import { parseConfig } from '../../functions/config/config.js';
import { ConfigError } from '../../functions/kernel/errors.js';
import { writeModeNamed } from '../../functions/modes/registry.js';

const env = {
  PIPELINE_ID: 'p',
  GOOGLE_CLOUD_PROJECT: 'proj',
  KAFKA_BROKERS: '127.0.0.1:9092',
  KAFKA_TOPICS: 'orders',
  BQ_DATASET: 'd',
  BQ_TABLE: 't',
  DEAD_LETTER_TOPIC: 'dead-letters',
  BQ_SCHEMA_FILE: 'schema/target.schema.json',
};

describe('the write-mode registry', () => {
  test('refuses a mode it does not know with a configuration error naming BQ_WRITE_MODE', () => {
    let thrown: unknown;
    try {
      writeModeNamed('load-ish');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    expect((thrown as ConfigError).variable).toBe('BQ_WRITE_MODE');
    expect((thrown as Error).message).toMatch(/"load-ish" is not one of .*storage-write/);
  });

  test('does not take an inherited property for a mode', () => {
    expect(() => writeModeNamed('toString')).toThrow(ConfigError);
  });

  test('knows every mode the config parser accepts, and each says what verify and a seek mean in it', () => {
    const names = ['storage-write', 'merge', 'insert-all', 'cdc', 'load'];
    for (const name of names) {
      const extra = name === 'cdc' ? { CHANGE_FORMAT: 'debezium' } : {};
      const config = parseConfig({ ...env, ...extra, BQ_WRITE_MODE: name });
      const mode = writeModeNamed(config.bigquery.writeMode);
      expect(mode.partitionConcurrency).toBeGreaterThan(0);
      expect(mode.seekBackNote(10, 20)).toContain('[10, 20)');
    }
    // At least once: the error table is not the mode's, and a seek back writes rows twice.
    expect(writeModeNamed('insert-all').verifies.errorTable).toBe(false);
    expect(writeModeNamed('insert-all').seekBackNote(1, 2)).toMatch(/twice/);
    expect(names.filter((n) => writeModeNamed(n).verifies.errorTable)).toEqual([
      'storage-write',
      'merge',
      'cdc',
      'load',
    ]);
    expect(names.filter((n) => writeModeNamed(n).verifies.changes)).toEqual(['cdc']);
  });
});
