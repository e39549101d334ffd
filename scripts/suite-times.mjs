// Where the suite's time went: its wall-clock total, its counts and its ten slowest files, from the report
// vitest writes at each run (vitest.config.ts: test-results/suite.json). `.ci/run` prints it last, so that
// the suite's growth is seen in the change that causes it.
//   node scripts/suite-times.mjs [REPORT] [HOW_MANY]
import { existsSync, readFileSync } from 'node:fs';
import { relative } from 'node:path';

const file = process.argv[2] ?? 'test-results/suite.json';
const most = Number(process.argv[3] ?? 10);
if (!existsSync(file)) {
  console.log(`suite times: no report at ${file} (the suite did not run to its end)`);
  process.exit(0);
}
const report = JSON.parse(readFileSync(file, 'utf8'));
const files = report.testResults.map((r) => ({
  name: relative(process.cwd(), r.name),
  seconds: (r.endTime - r.startTime) / 1000,
  tests: r.assertionResults.length,
}));
const ended = Math.max(...report.testResults.map((r) => r.endTime));
const wall = (ended - report.startTime) / 1000;
const busy = files.reduce((sum, f) => sum + f.seconds, 0);
console.log(
  `suite times: ${wall.toFixed(0)} s from the first test file to the last (files' own times add up to ` +
    `${busy.toFixed(0)} s); the ${most} slowest files:`,
);
for (const f of files.sort((a, b) => b.seconds - a.seconds).slice(0, most))
  console.log(`  ${f.seconds.toFixed(1).padStart(7)} s  ${f.name} (${f.tests} tests)`);
const skipped = report.numPendingTests + report.numTodoTests;
console.log(
  `suite: ${report.numPassedTests} passed, ${report.numFailedTests} failed${skipped > 0 ? `, ${skipped} skipped` : ''}`,
);
