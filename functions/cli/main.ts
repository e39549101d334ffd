/**
 * The command line: `kafka-bigquery-drain run` drains once, locally or anywhere, exactly as the Cloud Run
 * Job does (same environment variables, same exit codes, same logs on stdout). On a terminal it also
 * shows progress on stderr.
 */

import { hostname, userInfo } from 'node:os';
import { pathToFileURL } from 'node:url';
import { createFirestoreCheckpoints } from '../checkpoints/firestore-checkpoints.js';
import { recordGoogleCalls } from '../google/call-recorder.js';
import { resolveSecretReferences } from '../google/secret-references.js';
import { exitWhenWritten, quietLocalAuth, runMain } from '../job/main.js';
import { routeTopics } from '../job/routing.js';
import { ConfigError } from '../kernel/errors.js';
import { partitionStatus } from '../status/partition-status.js';
import { check } from './check-command.js';
import { deadLetterCommand } from './dead-letter-commands.js';
import { dispatch } from './dispatch-command.js';
import { statusLines } from './human-tables.js';
import { type OperationsDeps, parseOperatorArgs, seek, setPaused, UsageError } from './operations.js';
import { cliServices, readConfig } from './read-config.js';
import { terminalWidth } from './text-table.js';
import { verify } from './verify-command.js';

/** Each command's usage, as `kafka-bigquery-drain <command> --help` prints it. */
const commands: Readonly<Record<string, string>> = {
  run: `run
      drain this task's partitions once, from their checkpoints, within DRAIN_BUDGET_SECONDS; JSON log
      lines on stdout, the last one the run summary`,
  check: `check [--records N] [--json]
      will this pipeline work? Kafka, topics, registry, tables, permissions, Firestore, Pub/Sub, and a dry
      run of N records a partition (default 100); writes nothing; exit 1 when a check fails`,
  verify: `verify [--wide | --json]
      reconcile each partition's continuity ledger with the target table; exit 1 on any hole, gap or
      duplicate`,
  status: `status [--wide | --json]
      each partition: checkpoint, high watermark, lag, last progress, lease holder, paused, open alerts`,
  seek: `seek --topic T [--partition P] (--offset N | --timestamp ISO | --earliest | --latest)
       --reason "..." [--force] [--allow-forward] [--dry-run]
      move checkpoints on purpose, under a lease, with an audit record; a --timestamp seek that would
      move a partition forwards moves nothing and exits 2 unless --allow-forward`,
  pause: `pause --topic T [--partition P] --reason "..."
      runs skip the partition until it is resumed`,
  resume: `resume --topic T [--partition P] --reason "..."
      runs drain the partition again`,
  dispatch: `dispatch [--json] [--launch local|cloud-run] [--min-tasks N] [--max-tasks N]
      size the next execution to the backlog: the records waiting, the tasks still running, the rate a
      task drained in recent runs; prints the decision, and with --launch starts it (local: the tasks as
      processes here, waited for; cloud-run: an execution of DISPATCH_JOB)`,
  'dead-letters': `dead-letters --subscription S [--max N]
      list dead letters (origin, kind, reason); acknowledges none`,
  'replay-dead-letters': `replay-dead-letters --subscription S [--max N] [--dry-run]
      re-validate dead letters with the current schema and rules; write those that pass (idempotently,
      keyed by their origin) and acknowledge them once durable; leave the rest (then exit 1)`,
};

const footer = `configuration comes from the environment (docs/configuration.md); exit codes: 0 ok, 1 failed (retry is safe),
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
  recordGoogleCalls(env);
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
  if (commands[command] === undefined) {
    process.stderr.write(`unknown command "${command}"\n${usage}\n`);
    return 2;
  }
  const resolved = await withSecrets(env);
  return typeof resolved === 'number' ? resolved : operatorCommand(command, rest, resolved);
}

/** The environment with its Secret Manager references resolved, or the exit code when they cannot be. */
async function withSecrets(env: NodeJS.ProcessEnv): Promise<NodeJS.ProcessEnv | number> {
  try {
    return (await resolveSecretReferences(env)) as NodeJS.ProcessEnv;
  } catch (error) {
    process.stderr.write(
      error instanceof ConfigError
        ? `configuration error: ${error.message}\n`
        : `${error instanceof Error ? error.message : String(error)}\n`,
    );
    return error instanceof ConfigError ? 2 : 1;
  }
}

async function operatorCommand(command: string, rest: string[], env: NodeJS.ProcessEnv): Promise<number> {
  if (command === 'verify') {
    const json = rest.includes('--json');
    const wide = rest.includes('--wide');
    const unknown = rest.filter((a) => a !== '--json' && a !== '--wide');
    if (unknown.length > 0) {
      process.stderr.write(`verify: unknown argument ${unknown.join(' ')}\n${usage}\n`);
      return 2;
    }
    return finished('verify', verify(env, json ? 'json' : terminalWidth(wide)));
  }
  if (command === 'check') {
    return finished('check', check(rest, env));
  }
  if (command === 'dead-letters' || command === 'replay-dead-letters') {
    return finished(command, deadLetterCommand(command, rest, env), 'nothing was changed');
  }
  if (command === 'dispatch') {
    return finished('dispatch', dispatch(rest, env));
  }
  if (['status', 'seek', 'pause', 'resume'].includes(command)) {
    return finished(command, operate(command, rest, env), 'nothing was changed');
  }
  process.stderr.write(`unknown command "${command}"\n${usage}\n`);
  return 2;
}

/**
 * A command's exit code: its own, or 2 for a usage error (said, with `usageTail` after it), or 1 for a
 * failure (said).
 */
function finished(command: string, run: Promise<number>, usageTail?: string): Promise<number> {
  return run.catch((error: unknown) => {
    if (error instanceof UsageError) {
      process.stderr.write(
        `${command}: ${error.message}\n${usageTail === undefined ? '' : `${usageTail}\n`}`,
      );
      return 2;
    }
    process.stderr.write(`${command} failed: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  });
}

async function operate(command: string, argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  const args = parseOperatorArgs(argv);
  const config = readConfig(env);
  if (config === undefined) return 2;
  const { clients, kafka, source } = cliServices(config);
  try {
    const routed = await routeTopics(config, kafka);
    const topics = [...new Set(routed.flatMap((r) => r.topics))].sort();
    if (command === 'status') {
      const partitions = await partitionStatus(
        { firestore: clients.firestore, source },
        { pipelineId: config.pipelineId, routed },
      );
      const lines =
        args.json || !process.stdout.isTTY
          ? [JSON.stringify(partitions)]
          : statusLines(partitions, terminalWidth(args.wide), args.wide);
      for (const line of lines) process.stdout.write(`${line}\n`);
      return 0;
    }
    const deps: OperationsDeps = {
      checkpoints: createFirestoreCheckpoints(clients.firestore, config.pipelineId),
      source,
      // In the cloud, the operations job's execution (Cloud Audit Logs say who started it).
      actor:
        env.CLOUD_RUN_JOB === undefined
          ? `${userInfo().username}@${hostname()}`
          : `${env.CLOUD_RUN_JOB}/${env.CLOUD_RUN_EXECUTION ?? 'unknown'}`,
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

// In the image's bundle this module is the main one (scripts/bundle.mjs); no top-level await: the
// bundle is CommonJS, for V8's code cache (image-entry.ts).
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  void cli(process.argv.slice(2), process.env).then(exitWhenWritten);
}
