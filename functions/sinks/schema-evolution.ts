import type { BigQuery } from '@google-cloud/bigquery';
import { ConfigError } from '../kernel/errors.js';
import type { Logger } from '../kernel/logger.js';
import { sleep } from '../kernel/timers.js';
import { compareSchemas, mergeSchemas, type SchemaChange } from '../schema/compare.js';
import type { SchemaField } from '../schema/table-schema.js';
import { bigQueryError } from './bigquery-tables.js';

/**
 * Additive schema evolution: at the start of a run the table's schema is compared with the schema file's.
 * What BigQuery allows on a table with data is applied before anything is written: new NULLABLE or
 * REPEATED columns (nested fields of RECORDs too) and REQUIRED → NULLABLE. Anything else (a type change, a
 * removed column, a new REQUIRED column, a column made stricter) stops the run with exit 2, naming the
 * column and the change, and nothing is written.
 */
export interface SchemaEvolution {
  readonly table: string;
  readonly changes: readonly SchemaChange[];
}

/**
 * Brings the table's schema to the wanted one where BigQuery allows it, before anything is written.
 * Refused changes throw a ConfigError naming BQ_SCHEMA_FILE, the column and the change (exit 2). Several
 * tasks may do it at once: each patches the same schema, derived from the same file, and a patch that
 * finds the table already changed reads it again and finds nothing left to do. Returns what was applied.
 */
export async function evolveTable(
  bigquery: BigQuery,
  target: { dataset: string; table: string },
  wanted: readonly SchemaField[],
  logger: Logger,
): Promise<SchemaEvolution> {
  const table = bigquery.dataset(target.dataset).table(target.table);
  for (let attempt = 1; ; attempt++) {
    let current: SchemaField[];
    try {
      const [metadata] = await table.getMetadata();
      current = (metadata.schema?.fields ?? []) as SchemaField[];
    } catch (error) {
      throw bigQueryError(error, `read the schema of ${target.table}`);
    }
    const { changes, refused } = compareSchemas(current, wanted);
    if (refused.length > 0) {
      throw new ConfigError(
        'BQ_SCHEMA_FILE',
        `the schema file asks for changes BigQuery cannot make to ${target.dataset}.${target.table}: ${refused.map((r) => r.message).join('; ')}; nothing was written`,
      );
    }
    if (changes.length === 0) return { table: target.table, changes: [] };
    try {
      await table.setMetadata({ schema: { fields: mergeSchemas(current, wanted) } });
      for (const change of changes) {
        logger.notice('table schema evolved', { event: 'schema_change', table: target.table, ...change });
      }
      return { table: target.table, changes };
    } catch (error) {
      // Another task changing the same table at once: read it again (its change may be ours already).
      if (attempt >= 5) throw bigQueryError(error, `evolve the schema of ${target.table}`);
      logger.warn('schema update failed; reading the table again', { error, attempt });
      await sleep(200 * attempt);
    }
  }
}
