/**
 * An existing stack keeps every resource: the stack program's URNs, for the same config, are the ones it
 * had before the program became `makePipeline` shared with the `DrainPipeline` component
 * (test/fixtures/stack-urns.json, captured from the program then). None is deleted and made again.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { runProgram } from '../support/pulumi-program.js';

const before: string[] = JSON.parse(
  readFileSync(join(import.meta.dirname, '..', 'fixtures', 'stack-urns.json'), 'utf8'),
);

test("today's stack config keeps every URN it had", async () => {
  const program = await runProgram({ 'kafka-bigquery-drain:operators': '["group:ops@example.com"]' });
  expect(before.length).toBeGreaterThan(80);
  const now = new Set(program.urns);
  expect(before.filter((urn) => !now.has(urn))).toEqual([]);
});
