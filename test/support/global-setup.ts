import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { stackDir } from '../../stack/stack-env.js';
import { buildTestCli } from './test-cli.js';

const root = join(import.meta.dirname, '..', '..');
const stack = join(root, 'stack', 'stack.sh');

function running(): boolean {
  const pids = join(stackDir, 'pids');
  return ['kafka', 'firestore', 'pubsub', 'bigquery'].every((s) => existsSync(join(pids, `${s}.pid`)));
}

/**
 * The suite's Kafka topics (every name it makes starts `kbdtest_`) deleted, once when the suite starts (what
 * an interrupted suite left) and once when it ends: a broker reused day after day keeps its start time
 * and disk flat. Each project's setup calls it; the first call of each kind does it.
 */
function pruneOnce(when: 'start' | 'end'): void {
  const mark = `KBD_SUITE_PRUNED_${when.toUpperCase()}`;
  if (process.env[mark] === '1') return;
  process.env[mark] = '1';
  execFileSync('bash', [stack, 'prune'], { stdio: ['ignore', 'ignore', 'inherit'], timeout: 300_000 });
}

/** The CLI the end-to-end tests run (test-cli.ts), built from the sources once per suite. */
async function buildOnce(): Promise<void> {
  if (process.env.KBD_TEST_CLI_BUILT === '1') return;
  await buildTestCli();
  process.env.KBD_TEST_CLI_BUILT = '1';
}

/** Brings the local stack up for integration and end-to-end tests; fails loudly (with logs) if it cannot. */
export default async function setup(): Promise<() => void> {
  const wasRunning = running();
  try {
    execFileSync('bash', [stack, 'up'], { stdio: ['ignore', 'inherit', 'inherit'], timeout: 20 * 60_000 });
  } catch (error) {
    throw new Error(
      `the local stack did not come up (see the lines above and .stack/logs/): ${String(error)}`,
    );
  }
  const env = readFileSync(join(stackDir, 'env'), 'utf8');
  if (!env.includes('KAFKA_BROKERS=')) throw new Error('.stack/env is incomplete');
  // A stack that was already up may hold an emulator full of a bench's tables: it slows down as data piles
  // up in it (after an hour of benches, integration tests timed out on it at 15 s), so the tests get a
  // fresh one, as each end-to-end file does (job.ts).
  if (wasRunning)
    execFileSync('bash', [stack, 'restart', 'bigquery'], {
      stdio: ['ignore', 'ignore', 'inherit'],
      timeout: 120_000,
    });
  pruneOnce('start');
  await buildOnce();
  return () => {
    pruneOnce('end');
    if (!wasRunning && process.env.KBD_KEEP_STACK !== '1') {
      execFileSync('bash', [stack, 'down'], { stdio: 'inherit' });
    }
  };
}
