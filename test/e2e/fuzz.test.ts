/**
 * 10,000 generated payloads, hostile ones among them, through the real drain: the process never crashes,
 * every record ends up exactly once in the table or the dead-letter topic, and valid records in the same
 * batches as bad ones land all the same.
 */
import { expect, test } from 'vitest';
import { createPipeline, deadLetterOffsets, e2eClients, runJob, tableOffsets } from '../support/job.js';
import { produce } from '../support/kafka.js';

const clients = await e2eClients();

/** A small seeded generator, so that a failure can be reproduced. */
function random(seed: number) {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state ^ (state >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
    return state / 2 ** 32;
  };
}

type Payload = { value: string | Buffer | null; valid: boolean; what: string };

function payloads(count: number, seed: number): Payload[] {
  const next = random(seed);
  const pick = <T>(items: T[]) => items[Math.floor(next() * items.length)]!;
  const valid = (i: number): Payload => ({
    value: JSON.stringify({
      id: `r${i}`,
      n: i,
      note: pick(['', 'ünïcødé ✓', 'line\nbreak', 'nul \u0000 inside']),
    }),
    valid: true,
    what: 'valid',
  });
  const hostile: ((i: number) => Payload)[] = [
    () => ({
      value: Buffer.from([0x7b, 0x22, 0x69, 0x64, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
      valid: false,
      what: 'invalid UTF-8',
    }),
    (i) => ({
      value: JSON.stringify({ id: `r${i}`, n: i }).slice(0, 1 + Math.floor(next() * 10)),
      valid: false,
      what: 'truncated JSON',
    }),
    (i) => ({ value: JSON.stringify({ id: i, n: `r${i}` }), valid: false, what: 'wrong types' }),
    (i) => ({
      value: `{"id":"r${i}","n":${pick(['1e300', '9007199254740993', '-1e400', '123456789012345678901234567890'])}}`,
      valid: false,
      what: 'huge number',
    }),
    (i) => ({
      value: `{"id":"r${i}","note":${'{"a":'.repeat(2000)}1${'}'.repeat(2000)}}`,
      valid: false,
      what: 'deep nesting',
    }),
    (i) => ({ value: `{"id":"r${i}","__proto__":{"polluted":1}}`, valid: false, what: '__proto__ key' }),
    (i) => ({ value: `{"id":"r${i}","constructor":{"prototype":1}}`, valid: false, what: 'constructor key' }),
    () => ({ value: '\u0000\u0000{}', valid: false, what: 'NUL bytes' }),
    () => ({ value: pick(['', '{}', '[]', 'null', '""']), valid: false, what: 'empty value' }),
    () => ({ value: null, valid: false, what: 'tombstone' }),
    (i) => ({
      value: JSON.stringify({ id: `r${i}`, n: i, unexpected: true }),
      valid: false,
      what: 'unknown field',
    }),
  ];
  return Array.from({ length: count }, (_, i) => {
    if (i % 997 === 0)
      return {
        value: JSON.stringify({ id: `r${i}`, n: i, note: 'x'.repeat(400_000) }),
        valid: true,
        what: 'very large',
      };
    return next() < 0.5 ? valid(i) : pick(hostile)(i);
  });
}

test('10,000 generated payloads: no crash, each record exactly once in the table or the dead letters', async () => {
  // Tombstones are among the hostile payloads: dead-lettered here, so that every offset is in one place.
  const pipeline = await createPipeline(clients, 2, {
    DRAIN_BUDGET_SECONDS: '300',
    LEASE_TTL_SECONDS: '30',
    TOMBSTONES: 'dead-letter',
  });
  const generated = payloads(10_000, 20261129);
  const byPartition: Payload[][] = [[], []];
  for (const [i, p] of generated.entries()) byPartition[i % 2]!.push(p);
  await produce(
    pipeline.topic,
    byPartition.flatMap((ps, partition) => ps.map((p) => ({ partition, value: p.value }))),
  );

  const { code, summary } = await runJob(pipeline.env);
  expect(code).toBe(0);
  expect(summary.stopReason).toBe('caught_up');

  const table = await tableOffsets(clients, pipeline);
  const letters = await deadLetterOffsets(clients, pipeline);
  for (const [partition, expected] of byPartition.entries()) {
    const rows = table.get(partition) ?? [];
    const dead = letters.offsets.get(partition) ?? [];
    expect(rows.length, 'no duplicate rows').toBe(new Set(rows).size);
    expect(dead.length, 'no duplicate dead letters').toBe(new Set(dead).size);
    const validOffsets = expected.flatMap((p, offset) => (p.valid ? [offset] : []));
    const invalidOffsets = expected.flatMap((p, offset) => (p.valid ? [] : [offset]));
    expect(rows).toEqual(validOffsets);
    expect(dead).toEqual(invalidOffsets);
  }
  const kinds = new Map<string, number>();
  for (const m of letters.messages)
    kinds.set(m.attributes.error_kind!, (kinds.get(m.attributes.error_kind!) ?? 0) + 1);
  console.log(
    `fuzz: ${summary.rowsWritten} rows, dead letters by kind ${JSON.stringify(Object.fromEntries(kinds))}, ${summary.durationMs} ms`,
  );
});
