/** `check [--records N] [--json]`: will this pipeline work? Changes nothing (see check/checks.ts). */
import { checkPipeline } from '../check/checks.js';
import type { CheckReport } from '../check/report.js';
import { checkRouteFiles } from '../formats/route-values.js';
import { ConfigError } from '../kernel/errors.js';
import { createLogger } from '../kernel/logger.js';
import { UsageError } from './operations.js';
import { readConfig } from './read-config.js';
import { terminalWidth } from './text-table.js';

export async function check(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  let records = 100;
  let json = false;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--json') json = true;
    else if (argv[i] === '--records' && /^\d+$/.test(argv[i + 1] ?? '') && Number(argv[i + 1]) <= 10_000)
      records = Number(argv[++i]);
    else throw new UsageError(`unknown or bad argument "${argv[i]}" (--records takes 0 to 10000)`);
  }
  const config = readConfig(env);
  if (config === undefined) return 2;
  try {
    for (const route of config.routes) checkRouteFiles(route);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`configuration error: ${error.message}\n`);
    return 2;
  }
  const logger = createLogger({ level: 'error', write: (line) => process.stderr.write(`${line}\n`) });
  const report = await checkPipeline(config, { records, logger });
  const lines = json ? [JSON.stringify(jsonOf(report))] : reportLines(report, terminalWidth(false));
  for (const line of lines) process.stdout.write(`${line}\n`);
  return report.ok ? 0 : 1;
}

/** The report as `--json` prints it: `{ ok, checks: [{ name, ok, detail }], dryRun }`. */
function jsonOf(report: CheckReport) {
  const { samples, ...dryRun } = report.dryRun;
  return { ok: report.ok, checks: report.checks, dryRun: { ...dryRun, samples } };
}

/** One line a check, `✓` or `✗`, at most `width` wide; then the dry run's counts. */
export function reportLines(report: CheckReport, width: number): string[] {
  const nameWidth = Math.min(32, Math.max(...report.checks.map((c) => c.name.length)));
  const cut = (line: string) => (line.length > width ? `${line.slice(0, width - 1)}…` : line);
  const lines = report.checks.map((c) => cut(`${c.ok ? '✓' : '✗'} ${c.name.padEnd(nameWidth)}  ${c.detail}`));
  const { records, rows, tombstones, filtered, deadLetters, samples } = report.dryRun;
  const letters = Object.values(deadLetters).reduce((a, b) => a + (b ?? 0), 0);
  lines.push(
    '',
    cut(
      `dry run: ${records} records: ${rows} rows, ${letters} dead letters, ${tombstones} tombstones skipped${filtered > 0 ? `, ${filtered} filtered by the transform` : ''}`,
    ),
  );
  for (const [kind, count] of Object.entries(deadLetters))
    lines.push(cut(`  ${kind} ${count}: ${samples[kind as keyof typeof samples] ?? ''}`));
  const failed = report.checks.filter((c) => !c.ok).length;
  lines.push(
    failed === 0
      ? `check: ${report.checks.length} checks passed; nothing was written`
      : `check: ${failed} of ${report.checks.length} checks failed; nothing was written`,
  );
  return lines;
}
