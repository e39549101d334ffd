import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { stackDir } from '../../stack/stack-env.js';

const root = join(import.meta.dirname, '..', '..');
const stack = join(root, 'stack', 'stack.sh');

function running(): boolean {
  const pids = join(stackDir, 'pids');
  return ['kafka', 'firestore', 'pubsub', 'bigquery'].every((s) => existsSync(join(pids, `${s}.pid`)));
}

/** Brings the local stack up for integration and end-to-end tests; fails loudly (with logs) if it cannot. */
export default function setup(): () => void {
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
  return () => {
    if (!wasRunning && process.env.KBD_KEEP_STACK !== '1') {
      execFileSync('bash', [stack, 'down'], { stdio: 'inherit' });
    }
  };
}
