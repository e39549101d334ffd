/**
 * `dispatch [--json] [--launch local|cloud-run] [--min-tasks N] [--max-tasks N]`: the dispatcher's
 * decision against a live pipeline (functions/dispatch/dispatcher.ts): printed, and with `--launch local`
 * the execution's tasks started on this machine and waited for (their lines pass through; the exit code is
 * the worst of theirs), with `--launch cloud-run` an execution of DISPATCH_JOB started as the HTTP
 * function starts it. The bounds are DISPATCH_MIN_TASKS and DISPATCH_MAX_TASKS unless given here.
 */
import { cloudRunLauncher } from '../dispatch/cloud-run-launcher.js';
import { dispatchOnce } from '../dispatch/dispatcher.js';
import { decideOnly, type Launcher } from '../dispatch/launcher.js';
import { localLauncher } from '../dispatch/local-launcher.js';
import { allTopics } from '../job/routing.js';
import { createLogger } from '../kernel/logger.js';
import { UsageError } from './operations.js';
import { cliServices, readConfig } from './read-config.js';

interface DispatchArgs {
  json: boolean;
  launch: 'none' | 'local' | 'cloud-run';
  minTasks?: number;
  maxTasks?: number;
}

function parseArgs(argv: readonly string[]): DispatchArgs {
  const args: DispatchArgs = { json: false, launch: 'none' };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const next = argv[i + 1] ?? '';
    if (flag === '--json') args.json = true;
    else if (flag === '--launch' && (next === 'local' || next === 'cloud-run')) {
      args.launch = next;
      i++;
    } else if ((flag === '--min-tasks' || flag === '--max-tasks') && /^[1-9]\d{0,3}$/.test(next)) {
      if (flag === '--min-tasks') args.minTasks = Number(next);
      else args.maxTasks = Number(next);
      i++;
    } else throw new UsageError(`unknown or incomplete argument "${flag}"`);
  }
  return args;
}

export async function dispatch(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  const args = parseArgs(argv);
  const config = readConfig(env);
  if (config === undefined) return 2;
  const minTasks = args.minTasks ?? config.dispatch.minTasks;
  const maxTasks = args.maxTasks ?? config.dispatch.maxTasks ?? Number.POSITIVE_INFINITY;
  if (minTasks > maxTasks)
    throw new UsageError(`the least tasks (${minTasks}) is above the most (${maxTasks})`);
  const write = (line: string) => process.stdout.write(`${line}\n`);
  // Without --json the decision is a sentence; the tasks' own lines pass through as they are.
  const logger = createLogger({
    write: args.json ? write : (line) => write(humanLine(line)),
  });
  const { clients, kafka, source } = cliServices(config);
  const cloud = args.launch === 'cloud-run' ? await cloudRunLauncher(config.dispatch) : undefined;
  const launcher: Launcher =
    args.launch === 'local' ? localLauncher(env, config.pipelineId, write) : (cloud ?? decideOnly);
  try {
    const outcome = await dispatchOnce({ firestore: clients.firestore, source, logger }, config, {
      topics: await allTopics(config, kafka),
      limits: { minTasks, maxTasks },
      launcher,
    });
    return outcome.exitCode ?? 0;
  } finally {
    await Promise.all([clients.close(), cloud?.close()]);
  }
}

function humanLine(json: string): string {
  const entry = JSON.parse(json) as Record<string, unknown>;
  if (entry.event === 'dispatch') return `${entry.tasks} task(s): ${entry.reason}`;
  if (entry.event === 'dispatch_launched')
    return `execution ${entry.execution}${entry.exitCode === undefined ? ' started' : ` ended, exit ${entry.exitCode}`}`;
  return json;
}
