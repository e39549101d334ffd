/** `verify`: per table (or group of tables sharing a topic), its partitions against the tables (and error tables). */
import kafkajs from 'kafkajs';
import { groupRoutes, groupTables } from '../config/route-groups.js';
import { createGoogleClients } from '../google/clients.js';
import { routeTopics } from '../job/routing.js';
import { writeModeNamed } from '../modes/registry.js';
import { deadLetterTableName } from '../schema/table-schema.js';
import { kafkaClientOptions } from '../sources/kafka-client.js';
import type { PartitionVerdict } from '../verify/reconcile.js';
import { verifyPipeline } from '../verify/verify.js';
import { verifyLines } from './human-tables.js';
import { readConfig } from './read-config.js';

/** `output`: 'json', or the width a table may take (Infinity: `--wide`, every column). */
export async function verify(env: NodeJS.ProcessEnv, output: 'json' | number): Promise<number> {
  const config = readConfig(env);
  if (config === undefined) return 2;
  const clients = createGoogleClients(config);
  try {
    // Per table: each route's partitions against its own table (and error table).
    const kafka = new kafkajs.Kafka(
      kafkaClientOptions(config, `kafka-bigquery-drain-cli-${config.pipelineId}`),
    );
    const verdicts: (PartitionVerdict & { table: string })[] = [];
    const { verifies } = writeModeNamed(config.bigquery.writeMode);
    // Routes sharing a topic by `when` are reconciled together: each offset in exactly one of their tables.
    for (const group of groupRoutes(await routeTopics(config, kafka))) {
      const found = await verifyPipeline(clients, {
        pipelineId: config.pipelineId,
        tables: group.members.map(({ route }) => ({
          dataset: route.dataset,
          table: route.table,
          // The exactly-once modes write the error table themselves, each dead letter once: it is reconciled too.
          ...(verifies.errorTable ? { deadLetterTable: deadLetterTableName(route.table) } : {}),
        })),
        topics: group.topics,
        ...(verifies.changes ? { changes: true } : {}),
      });
      const table = groupTables(group.members);
      verdicts.push(...found.map((v) => ({ table, ...v })));
    }
    if (output === 'json') {
      process.stdout.write(`${JSON.stringify(verdicts)}\n`);
    } else {
      for (const line of verifyLines(verdicts, output, output === Number.POSITIVE_INFINITY))
        process.stdout.write(`${line}\n`);
      const bad = verdicts.filter((v) => !v.ok);
      const tables = new Set(verdicts.map((v) => v.table));
      if (tables.size > 1) {
        for (const table of tables) {
          const mine = verdicts.filter((v) => v.table === table);
          const wrong = mine.filter((v) => !v.ok).length;
          process.stdout.write(
            `verify ${table}: ${mine.length} partitions, ${wrong === 0 ? 'clean' : `${wrong} with holes, gaps or duplicates`}\n`,
          );
        }
      }
      process.stdout.write(
        bad.length === 0
          ? `verify: ${verdicts.length} partitions, no hole, no gap, no duplicate\n`
          : `verify: ${bad.length} of ${verdicts.length} partitions have holes, gaps or duplicates\n`,
      );
    }
    return verdicts.every((v) => v.ok) ? 0 : 1;
  } finally {
    await clients.close();
  }
}
