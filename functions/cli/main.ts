/**
 * The command line: `kafka-bigquery-drain run` drains once, locally or anywhere, exactly as the Cloud Run
 * Job does (same environment variables, same exit codes, same logs on stdout). On a terminal it also
 * shows progress on stderr.
 */
import { pathToFileURL } from 'node:url';
import { quietLocalAuth, runMain } from '../job/main.js';

const usage = `usage: kafka-bigquery-drain <command>

commands:
  run     drain this task's partitions once, from their checkpoints, within DRAIN_BUDGET_SECONDS

configuration comes from the environment (see README.md); exit codes: 0 ok, 1 failed (retry is safe),
2 bad configuration or usage`;

export async function cli(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  quietLocalAuth(env);
  const [command, ...rest] = argv;
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    process.stderr.write(`${usage}\n`);
    return command === undefined ? 2 : 0;
  }
  if (command === 'run') {
    if (rest.length > 0) {
      process.stderr.write(`run takes no arguments (got ${rest.join(' ')})\n${usage}\n`);
      return 2;
    }
    return runMain({ env, onProgress: process.stderr.isTTY ? progressPrinter() : undefined });
  }
  process.stderr.write(`unknown command "${command}"\n${usage}\n`);
  return 2;
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
  process.exit(await cli(process.argv.slice(2), process.env));
}
