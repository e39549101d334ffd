/** `dead-letters` (look) and `replay-dead-letters` (write them back to their tables, recorded for verify). */
import { claimReplays, forgetReplays, recordReplays, replaysAt } from '../checkpoints/replay-log.js';
import { type Route, routesOfTopic, tableName } from '../config/routes.js';
import { errorTableCopies } from '../dead-letters/error-table-copies.js';
import { createDeadLetterSubscription } from '../dead-letters/pubsub-subscription.js';
import { type ReplayOutcome, type ReplayTarget, replayDeadLetters } from '../dead-letters/replay.js';
import { createRecordNames } from '../formats/record-names.js';
import { createGoogleClients } from '../google/clients.js';
import { createRegistry, namedTopics, routeValues, rulesFor, transformFor } from '../job/wiring.js';
import { armCrashPoints, crashPointsOf } from '../kernel/crash-points.js';
import { createLogger } from '../kernel/logger.js';
import type { KafkaRecord } from '../kernel/records.js';
import { writeModeNamed } from '../modes/registry.js';
import { createRouteSinks } from '../modes/route-sinks.js';
import { withEvolvedColumns } from '../modes/target-table.js';
import { routeColumns } from '../records/field-names.js';
import { createRecordRouter } from '../records/record-router.js';
import { UsageError } from './operations.js';
import { readConfig } from './read-config.js';

export async function deadLetterCommand(
  command: string,
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
): Promise<number> {
  let subscription = '';
  let max = 10_000;
  let dryRun = false;
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (flag === '--subscription' && argv[i + 1] !== undefined) subscription = argv[++i]!;
    else if (flag === '--max' && /^\d+$/.test(argv[i + 1] ?? '')) max = Number(argv[++i]);
    else if (flag === '--dry-run' && command === 'replay-dead-letters') dryRun = true;
    else throw new UsageError(`unknown or incomplete argument "${flag}"`);
  }
  if (subscription === '')
    throw new UsageError('--subscription is required (a pull subscription on DEAD_LETTER_TOPIC)');
  const config = readConfig(env);
  if (config === undefined) return 2;
  armCrashPoints(crashPointsOf(env)); // test-only (KBD_FAULT_POINT): a replay killed mid-way
  const clients = createGoogleClients(config);
  const letters = createDeadLetterSubscription(clients.pubsub, subscription);
  const print = (line: string) => process.stdout.write(`${line}\n`);
  try {
    if (command === 'dead-letters') {
      const pulled = await letters.pull(Math.min(max, 1000));
      for (const l of pulled) {
        const a = l.attributes;
        print(
          `${a.source_topic}:${a.source_partition}:${a.source_offset}  ${a.error_kind}  ${a.error_message}`,
        );
      }
      await Promise.all(pulled.map((l) => l.release()));
      print(`${pulled.length} dead letters shown (none acknowledged)`);
      return 0;
    }
    const logger = createLogger({ level: 'warning', write: (line) => process.stderr.write(`${line}\n`) });
    const runId = `replay-${Date.now().toString(36)}`;
    // Each letter goes back to the table its topic is routed to now, through that route's schema and rules.
    const transforms = new Map(
      await Promise.all(config.routes.map(async (r) => [r, await transformFor(r, config)] as const)),
    );
    const rules = new Map(
      await Promise.all(config.routes.map(async (r) => [r, await rulesFor(r, config)] as const)),
    );
    const registry = config.schemaRegistry === null ? null : createRegistry(config.schemaRegistry);
    const values = new Map(
      await Promise.all(
        config.routes.map(
          async (r) => [r, await routeValues(r, namedTopics(r), registry, clients.bigquery, logger)] as const,
        ),
      ),
    );
    const targets = new Map<Route, ReplayTarget & { close(): Promise<void> }>();
    const names = registry === null ? undefined : createRecordNames(registry, logger);
    /** The route a record goes to now: its topic's, or (routes sharing it by `when`) the one taking it. */
    const routeFor = async (record: KafkaRecord): Promise<Route | undefined> => {
      const taking = routesOfTopic(config.routes, record.topic);
      if (taking.length <= 1) return taking[0];
      const router = createRecordRouter(taking, names);
      const parts = await router.split([record]);
      return router.refusal(record) === undefined ? taking[parts.findIndex((p) => p.length > 0)] : undefined;
    };
    const target = async (record: KafkaRecord) => {
      const route = await routeFor(record);
      if (route === undefined) return undefined;
      let made = targets.get(route);
      if (made === undefined) {
        const { columns, format } = values.get(route)!;
        const named = routeColumns(columns, route);
        // UNKNOWN_FIELDS=evolve: the columns runs added to the table are the route's too.
        const fields =
          route.unknownFields === 'evolve' ? await withEvolvedColumns(clients, route, named) : named;
        const { sink, close } = createRouteSinks({
          config,
          route,
          clients,
          userSchema: fields,
          logger,
          runId: `${runId}-r${config.routes.indexOf(route)}`,
        });
        const routeRules = rules.get(route);
        made = {
          table: tableName(route),
          sink,
          close,
          ...(routeRules === undefined ? {} : { rules: routeRules }),
          ...(transforms.get(route) === undefined ? {} : { transform: transforms.get(route)! }),
          shape: {
            fields,
            unknownFields: route.unknownFields,
            fieldNames: route.fieldNames,
            metadata: route.metadata,
          },
          ...(format === undefined ? {} : { format }),
        };
        targets.set(route, made);
      }
      return made;
    };
    try {
      const outcome = await replayDeadLetters(
        {
          pull: (n) => letters.pull(n),
          // A mode that writes its dead letters into the error tables itself keeps them there, whole.
          ...(writeModeNamed(config.bigquery.writeMode).verifies.errorTable
            ? { kept: (origins) => errorTableCopies(clients.bigquery, config.routes, origins) }
            : {}),
          target,
          now: () => new Date(),
          print,
          log: {
            at: (origins) => replaysAt(clients.firestore, config.pipelineId, origins),
            claim: (replayed) => claimReplays(clients.firestore, config.pipelineId, replayed, runId),
            done: (replayed) => recordReplays(clients.firestore, config.pipelineId, replayed, runId),
            forget: (origins) => forgetReplays(clients.firestore, config.pipelineId, origins, runId),
          },
        },
        { dryRun, max },
      );
      return replayExit(outcome, dryRun, print);
    } finally {
      await Promise.all([...targets.values()].map((t) => t.close()));
    }
  } finally {
    await letters.close();
    await clients.close();
  }
}

/** What a replay says at its end, and its exit code: 1 while letters that fail again stay. */
function replayExit(outcome: ReplayOutcome, dryRun: boolean, print: (line: string) => void): number {
  for (const [partition, count] of [...outcome.replayedByPartition].sort()) {
    print(`replayed ${count} into partition ${partition} (recorded for verify)`);
  }
  print(
    `${dryRun ? 'would replay' : 'replayed'} ${outcome.replayed}, still failing ${outcome.stillFailing.length}`,
  );
  if (outcome.stillFailing.length === 0) return 0;
  print(
    `${outcome.stillFailing.length} letters fail again and stay in the subscription: exit 1 (their reasons are above)`,
  );
  return 1;
}
