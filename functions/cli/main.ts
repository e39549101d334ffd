/**
 * The command line: `kafka-bigquery-drain run` drains once, locally or anywhere, exactly as the Cloud Run
 * Job does (same environment variables, same exit codes, same logs on stdout). On a terminal it also
 * shows progress on stderr.
 */

import { hostname, userInfo } from 'node:os';
import { pathToFileURL } from 'node:url';
import kafkajs from 'kafkajs';
import { createFirestoreCheckpoints } from '../checkpoints/firestore-checkpoints.js';
import { recordReplays } from '../checkpoints/replay-log.js';
import { type DrainConfig, parseConfig } from '../config/config.js';
import { type Route, routeOf, tableName } from '../config/routes.js';
import { createDeadLetterSubscription } from '../dead-letters/pubsub-subscription.js';
import { type ReplayTarget, replayDeadLetters } from '../dead-letters/replay.js';
import { createGoogleClients } from '../job/clients.js';
import { exitWhenWritten, quietLocalAuth, runMain } from '../job/main.js';
import { routeTopics } from '../job/routing.js';
import { createRegistry, namedTopics, routeValues, rulesFor } from '../job/wiring.js';
import { armCrashPoints, crashPointsOf } from '../kernel/crash-points.js';
import { ConfigError } from '../kernel/errors.js';
import { createLogger } from '../kernel/logger.js';
import { writeModeNamed } from '../modes/registry.js';
import { createRouteSinks } from '../modes/route-sinks.js';
import { deadLetterTableName } from '../schema/table-schema.js';
import { kafkaClientOptions } from '../sources/kafka-client.js';
import { createKafkaSource } from '../sources/kafka-source.js';
import { partitionStatus } from '../status/partition-status.js';
import type { PartitionVerdict } from '../verify/reconcile.js';
import { verifyPipeline } from '../verify/verify.js';
import {
  formatStatus,
  type OperationsDeps,
  parseOperatorArgs,
  seek,
  setPaused,
  UsageError,
} from './operations.js';

/** Each command's usage, as `kafka-bigquery-drain <command> --help` prints it. */
const commands: Readonly<Record<string, string>> = {
  run: `run
      drain this task's partitions once, from their checkpoints, within DRAIN_BUDGET_SECONDS; JSON log
      lines on stdout, the last one the run summary`,
  verify: `verify [--json]
      reconcile each partition's continuity ledger with the target table; exit 1 on any hole, gap or
      duplicate`,
  status: `status [--json]
      each partition: checkpoint, high watermark, lag, paused, lease holder, open alerts`,
  seek: `seek --topic T [--partition P] (--offset N | --timestamp ISO | --earliest | --latest)
       --reason "..." [--force] [--dry-run]
      move checkpoints on purpose, under a lease, with an audit record`,
  pause: `pause --topic T [--partition P] --reason "..."
      runs skip the partition until it is resumed`,
  resume: `resume --topic T [--partition P] --reason "..."
      runs drain the partition again`,
  'dead-letters': `dead-letters --subscription S [--max N]
      list dead letters (origin, kind, reason); acknowledges none`,
  'replay-dead-letters': `replay-dead-letters --subscription S [--max N] [--dry-run]
      re-validate dead letters with the current schema and rules; write those that pass (idempotently,
      keyed by their origin) and acknowledge them once durable; leave the rest`,
};

const footer = `configuration comes from the environment (see README.md); exit codes: 0 ok, 1 failed (retry is safe),
2 bad configuration or usage`;

const usage = `usage: kafka-bigquery-drain <command> [--help]

commands:
${Object.values(commands)
  .map((text) => `  ${text}`)
  .join('\n')}

${footer}`;

const helpFlags = ['--help', '-h'];

export { exitWhenWritten };

export async function cli(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  quietLocalAuth(env);
  const [command, ...rest] = argv;
  if (command === undefined || helpFlags.includes(command) || command === 'help') {
    const topic = command === 'help' ? commands[rest[0] ?? ''] : undefined;
    if (topic !== undefined) process.stdout.write(`usage: kafka-bigquery-drain ${topic}\n\n${footer}\n`);
    else (command === undefined ? process.stderr : process.stdout).write(`${usage}\n`);
    return command === undefined ? 2 : 0;
  }
  // `<command> --help` anywhere among its arguments: that command's usage, nothing run.
  if (commands[command] !== undefined && rest.some((a) => helpFlags.includes(a))) {
    process.stdout.write(`usage: kafka-bigquery-drain ${commands[command]}\n\n${footer}\n`);
    return 0;
  }
  if (command === 'run') {
    if (rest.length > 0) {
      process.stderr.write(`run takes no arguments (got ${rest.join(' ')})\n${usage}\n`);
      return 2;
    }
    return runMain({ env, onProgress: process.stderr.isTTY ? progressPrinter() : undefined });
  }
  if (command === 'verify') {
    const json = rest.includes('--json');
    const unknown = rest.filter((a) => a !== '--json');
    if (unknown.length > 0) {
      process.stderr.write(`verify: unknown argument ${unknown.join(' ')}\n${usage}\n`);
      return 2;
    }
    return verify(env, json).catch((error: unknown) => {
      process.stderr.write(`verify failed: ${error instanceof Error ? error.message : String(error)}\n`);
      return 1;
    });
  }
  if (command === 'dead-letters' || command === 'replay-dead-letters') {
    return deadLetterCommand(command, rest, env).catch((error: unknown) => {
      if (error instanceof UsageError) {
        process.stderr.write(`${command}: ${error.message}\nnothing was changed\n`);
        return 2;
      }
      process.stderr.write(`${command} failed: ${error instanceof Error ? error.message : String(error)}\n`);
      return 1;
    });
  }
  if (['status', 'seek', 'pause', 'resume'].includes(command)) {
    return operate(command, rest, env).catch((error: unknown) => {
      if (error instanceof UsageError) {
        process.stderr.write(`${command}: ${error.message}\nnothing was changed\n`);
        return 2;
      }
      process.stderr.write(`${command} failed: ${error instanceof Error ? error.message : String(error)}\n`);
      return 1;
    });
  }
  process.stderr.write(`unknown command "${command}"\n${usage}\n`);
  return 2;
}

async function operate(command: string, argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  const args = parseOperatorArgs(argv);
  const config = readConfig(env);
  if (config === undefined) return 2;
  const clients = createGoogleClients(config);
  const logger = createLogger({ level: 'warning', write: (line) => process.stderr.write(`${line}\n`) });
  const kafka = new kafkajs.Kafka(
    kafkaClientOptions(config, `kafka-bigquery-drain-cli-${config.pipelineId}`),
  );
  const source = createKafkaSource(kafka, { groupPrefix: 'unused', logger });
  try {
    const routed = await routeTopics(config, kafka);
    const topics = routed.flatMap((r) => r.topics).sort();
    if (command === 'status') {
      const partitions = await partitionStatus(
        { firestore: clients.firestore, source },
        { pipelineId: config.pipelineId, routed },
      );
      const lines =
        args.json || !process.stdout.isTTY ? [JSON.stringify(partitions)] : formatStatus(partitions);
      for (const line of lines) process.stdout.write(`${line}\n`);
      return 0;
    }
    const deps: OperationsDeps = {
      checkpoints: createFirestoreCheckpoints(clients.firestore, config.pipelineId),
      source,
      actor: `${userInfo().username}@${hostname()}`,
      writeMode: config.bigquery.writeMode,
      topics,
      print: (line) => process.stdout.write(`${line}\n`),
    };
    if (command === 'seek') return await seek(deps, args);
    return await setPaused(deps, args, command === 'pause');
  } finally {
    await clients.close();
  }
}

async function deadLetterCommand(
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
    const target = (topic: string) => {
      const route = routeOf(config.routes, topic);
      if (route === undefined) return undefined;
      let made = targets.get(route);
      if (made === undefined) {
        const { columns: fields, format } = values.get(route)!;
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
          shape: { fields, unknownFields: config.unknownFields, metadata: route.metadata },
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
          target,
          now: () => new Date(),
          print,
          recordReplayed: (replayed) => recordReplays(clients.firestore, config.pipelineId, replayed, runId),
        },
        { dryRun, max },
      );
      for (const [partition, count] of [...outcome.replayedByPartition].sort()) {
        print(`replayed ${count} into partition ${partition} (recorded for verify)`);
      }
      print(
        `${dryRun ? 'would replay' : 'replayed'} ${outcome.replayed}, still failing ${outcome.stillFailing.length}`,
      );
      return 0;
    } finally {
      await Promise.all([...targets.values()].map((t) => t.close()));
    }
  } finally {
    await letters.close();
    await clients.close();
  }
}

/** The operator commands' configuration, or undefined (after saying why) when it is wrong. */
function readConfig(env: NodeJS.ProcessEnv): DrainConfig | undefined {
  try {
    return parseConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`configuration error: ${error.message}\n`);
    return undefined;
  }
}

async function verify(env: NodeJS.ProcessEnv, json: boolean): Promise<number> {
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
    for (const { route, topics } of await routeTopics(config, kafka)) {
      if (topics.length === 0) continue;
      const found = await verifyPipeline(clients, {
        pipelineId: config.pipelineId,
        dataset: route.dataset,
        table: route.table,
        topics,
        // The exactly-once modes write the error table themselves, each dead letter once: it is reconciled too.
        ...(verifies.errorTable ? { deadLetterTable: deadLetterTableName(route.table) } : {}),
        ...(verifies.changes ? { changes: true } : {}),
      });
      verdicts.push(...found.map((v) => ({ table: tableName(route), ...v })));
    }
    if (json) {
      process.stdout.write(`${JSON.stringify(verdicts)}\n`);
    } else {
      console.table(verdicts.map(({ gaps, ...v }) => ({ ...v, gaps: gaps.join(' ') })));
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

function progressPrinter() {
  const started = Date.now();
  let lastPrinted = 0;
  return ({ recordsRead, lag }: { recordsRead: number; lag: Map<string, number> }) => {
    const now = Date.now();
    if (now - lastPrinted < 500) return;
    lastPrinted = now;
    const rate = Math.round(recordsRead / Math.max(0.001, (now - started) / 1000));
    const left = [...lag].map(([p, n]) => `${p}=${n}`).join(' ');
    process.stderr.write(`\r\x1b[K${recordsRead} records, ${rate}/s, lag left: ${left}`);
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  exitWhenWritten(await cli(process.argv.slice(2), process.env));
}
