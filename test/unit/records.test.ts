import { describe, expect, test } from 'vitest';
import { deadLetterMessage, truncateUtf8 } from '../../functions/dead-letters/pubsub-dead-letters.js';
import { ownedBy, preferredTask, stableHash } from '../../functions/drain/assignment.js';
import { beginWaiting, joined, joinFetched } from '../../functions/drain/batch-fill.js';
import { compileRowText } from '../../functions/encoders/row-text.js';
import { DrainError } from '../../functions/kernel/errors.js';
import type { RowToWrite } from '../../functions/kernel/records.js';
import { backoffDelay, withRetry } from '../../functions/kernel/retry.js';
import { lineOf, linesOfRows } from '../../functions/modes/load/load-lines.js';
import { isDeadLetter, type RowShape, rowKey, toRow } from '../../functions/records/records.js';
import { splitRequests } from '../../functions/sinks/insert-all-sink.js';
import { createFakeClock } from '../support/fake-clock.js';
import { record } from '../support/memory-ports.js';

const at = new Date('2026-01-02T03:04:05.000Z');

describe('toRow', () => {
  test('adds the metadata columns and the row key', () => {
    const r = { ...record('orders', 2, 41, { id: 'a', n: 1 }), key: Buffer.from('k1') };
    const row = toRow(r, at);
    expect(isDeadLetter(row)).toBe(false);
    expect(row).toMatchObject({
      rowKey: 'orders:2:41',
      row: {
        id: 'a',
        n: 1,
        _kafka_topic: 'orders',
        _kafka_partition: 2,
        _kafka_offset: 41,
        _kafka_timestamp: new Date(r.timestamp).toISOString(),
        _kafka_key: Buffer.from('k1').toString('base64'),
        _ingested_at: at.toISOString(),
      },
    });
  });

  test.each([
    ['{"a":', 'decode', 'not UTF-8 JSON'],
    ['[1]', 'decode', 'not a JSON object'],
    ['"text"', 'decode', 'not a JSON object'],
    ['null', 'decode', 'not a JSON object'],
    ['{"_kafka_offset":1}', 'schema', 'reserved'],
  ])('%s is a %s dead letter', (value, kind, message) => {
    const result = toRow(record('t', 0, 0, value), at);
    expect(result).toMatchObject({ kind });
    expect((result as { message: string }).message).toContain(message);
  });

  test('optional metadata columns: every header in order (repeated keys too, values as bytes), the key as text where it is UTF-8', () => {
    const shape = {
      fields: [{ name: 'n', type: 'INT64' }],
      unknownFields: 'reject' as const,
      metadata: { headers: true, keyText: true },
    };
    const base = record('orders', 0, 1, { n: 1 });
    const text = toRow(
      {
        ...base,
        key: Buffer.from('order-1'),
        rawHeaders: [
          { key: 'tag', value: Buffer.from('one') },
          { key: 'tag', value: Buffer.from('two') },
          { key: 'empty', value: null },
        ],
      },
      new Date(0),
      shape,
    ) as RowToWrite;
    expect(text.row._kafka_key_text).toBe('order-1');
    expect(text.row._kafka_headers).toEqual([
      { key: 'tag', value: Buffer.from('one').toString('base64') },
      { key: 'tag', value: Buffer.from('two').toString('base64') },
      { key: 'empty', value: null },
    ]);
    const binary = toRow({ ...base, key: Buffer.from([0xff, 0x00]) }, new Date(0), shape) as RowToWrite;
    expect(binary.row._kafka_key_text).toBeNull();
    expect(binary.row._kafka_headers).toEqual([]);
    // Off (the default): the columns are not in the row at all.
    const off = toRow(base, new Date(0), {
      ...shape,
      metadata: { headers: false, keyText: false },
    }) as RowToWrite;
    expect(Object.keys(off.row)).not.toContain('_kafka_headers');
    expect(Object.keys(off.row)).not.toContain('_kafka_key_text');
  });

  test('the optional metadata columns are reserved names, switched on or not', () => {
    const letter = toRow(record('orders', 0, 1, { _kafka_headers: [] }), new Date(0));
    expect(letter).toMatchObject({
      kind: 'schema',
      message: 'field _kafka_headers is reserved for metadata',
    });
  });

  test('a value larger than a BigQuery row can be is an oversize dead letter', () => {
    const big = { ...record('t', 0, 0, ''), value: Buffer.alloc(9 * 1024 * 1024 + 1, 0x20) };
    expect(toRow(big, at)).toMatchObject({ kind: 'oversize' });
  });

  test('invalid UTF-8 and tombstones are decode dead letters', () => {
    expect(toRow({ ...record('t', 0, 0, ''), value: Buffer.from([0x7b, 0xff, 0x7d]) }, at)).toMatchObject({
      kind: 'decode',
    });
    expect(toRow({ ...record('t', 0, 0, ''), value: null }, at)).toMatchObject({
      kind: 'decode',
      message: expect.stringContaining('tombstone'),
    });
  });
});

describe('batching', () => {
  const fetch = (offsets: number[], pad = 100, nextOffset = offsets[offsets.length - 1]! + 1) => ({
    topic: 't',
    partition: 0,
    fromOffset: offsets[0]!,
    records: offsets.map((o) => record('t', 0, o, { pad: 'x'.repeat(pad) })),
    nextOffset,
  });
  const offsets = (batch: { records: readonly { offset: number }[] }) => batch.records.map((r) => r.offset);

  test('a fetch begins a batch as far as the record limit, the rest beginning the next at its first record', () => {
    const limits = { maxRecords: 4, maxBytes: 1_000_000 };
    const first = beginWaiting(fetch([0, 1, 2, 3, 5, 6], 100, 9), limits);
    expect([offsets(joined(first.waiting)), joined(first.waiting).nextOffset, first.waiting.full]).toEqual([
      [0, 1, 2, 3],
      5,
      true,
    ]);
    expect([first.rest?.fromOffset, offsets(first.rest!), first.rest?.nextOffset]).toEqual([5, [5, 6], 9]);
    const second = beginWaiting(first.rest!, limits);
    expect([offsets(joined(second.waiting)), second.waiting.nextOffset, second.rest]).toEqual([
      [5, 6],
      9,
      undefined,
    ]);
  });

  test('fetches that follow on join a batch up to its limits, on bytes too; a record larger than the limit is a batch of its own', () => {
    const limits = { maxRecords: 100, maxBytes: 500 };
    const { waiting } = beginWaiting(fetch([0]), limits);
    const size = waiting.bytes;
    expect(size).toBeGreaterThan(100);
    const join = joinFetched(waiting, fetch([1, 2, 3, 4, 5, 6]), limits);
    const fit = Math.floor(500 / size) - 1;
    expect([offsets(joined(waiting)).length, waiting.full, join.bytes]).toEqual([fit + 1, true, fit * size]);
    expect(join.rest?.fromOffset).toBe(fit + 1);
    expect(waiting.bytes).toBeLessThanOrEqual(500);
    // full: a fetch that follows on is not taken; nor is one that does not follow on
    expect(joinFetched(waiting, fetch([fit + 1]), limits)).toEqual({
      bytes: 0,
      records: 0,
      rest: fetch([fit + 1]),
    });
    const other = beginWaiting(fetch([20]), limits).waiting;
    expect(joinFetched(other, fetch([30]), limits).rest?.fromOffset).toBe(30);
    const huge = beginWaiting(fetch([40, 41], 1_000), limits);
    expect([offsets(joined(huge.waiting)), huge.waiting.full, huge.rest?.fromOffset]).toEqual([
      [40],
      true,
      41,
    ]);
  });

  test('splitRequests keeps requests within 500 rows and the byte limit, in order', () => {
    const rows = Array.from({ length: 1201 }, (_, i) => ({
      rowKey: `t:0:${i}`,
      record: record('t', 0, i, {}),
      row: { i },
    }));
    expect(splitRequests(rows, 500, 5_000_000).map((r) => r.length)).toEqual([500, 500, 201]);
    const small = splitRequests(rows.slice(0, 10), 500, 100);
    expect(small.flat().map((r) => r.row.rowKey)).toEqual(rows.slice(0, 10).map((r) => r.rowKey));
    expect(small.length).toBeGreaterThan(1);
  });

  test("a row's text goes into its insertAll entry and its load line byte for byte: extra columns after its brace, line breaks as spaces", () => {
    const shape: RowShape = { fields: [{ name: 's', type: 'STRING' }], unknownFields: 'reject' };
    const text = compileRowText(shape)!;
    const at = new Date('2026-12-06T01:02:03.456Z');
    const made = (json: string, offset: number) => {
      const r = record('tópic', 0, offset, json);
      return { rowKey: rowKey(r), record: r, json: text(r, at)! };
    };
    const rows = [made('{"s":"é ✓ 𝄞"}', 1), made('{\r\n "s" : "x"\n}\n', 2), made(' { } ', 3)];
    const general = (i: number) =>
      JSON.parse(JSON.stringify((toRow(rows[i]!.record, at, shape) as RowToWrite).row));
    const entries = splitRequests(rows, 500, 5_000_000, { _batch: 'b-ü' })[0]!;
    expect(entries.map((entry) => JSON.parse(entry.json.toString()))).toEqual(
      rows.map((row, i) => ({ insertId: row.rowKey, json: { _batch: 'b-ü', ...general(i) } })),
    );
    expect(entries.map((e) => e.json.length)).toEqual(
      entries.map((e) => Buffer.byteLength(e.json.toString())),
    );
    const lines = rows.map((row) => lineOf(row));
    lines.forEach((line, i) => {
      const body = line.subarray(0, -1);
      expect([line.at(-1), body.includes(10), body.includes(13)]).toEqual([10, false, false]);
      expect(JSON.parse(body.toString())).toEqual(general(i));
    });
    // The text as it came, but for its line breaks: bytes the same length, the same where no break was.
    expect(lines[1]!.subarray(0, -1).toString()).toBe(rows[1]!.json.toString().replace(/[\r\n]/g, ' '));
    // A row made the general way: its object's JSON.
    const object = { rowKey: 't:0:9', record: record('t', 0, 9, {}), row: { s: 'ü' } };
    expect(lineOf(object).toString()).toBe('{"s":"ü"}\n');
    // A batch's lines in one buffer (the streamed load's): the same bytes as its rows' lines joined.
    expect(linesOfRows([...rows, object])).toEqual(Buffer.concat([...lines, lineOf(object)]));
    expect(JSON.parse(splitRequests([object], 500, 5_000_000)[0]![0]!.json.toString())).toEqual({
      insertId: 't:0:9',
      json: { s: 'ü' },
    });
  });
});

describe('a FLOAT64 beyond a double', () => {
  test("goes to insertAll as BigQuery's string, at the top, nested and repeated: never as null", () => {
    const shape = {
      fields: [
        { name: 'f', type: 'FLOAT64' },
        { name: 'fs', type: 'FLOAT64', mode: 'REPEATED' as const },
        { name: 'meta', type: 'RECORD', fields: [{ name: 'w', type: 'FLOAT64' }] },
      ],
      unknownFields: 'reject' as const,
    };
    const row = toRow(record('t', 0, 7, '{"f":1e400,"fs":[-1e400,1.5],"meta":{"w":-1e999}}'), at, shape);
    expect(isDeadLetter(row)).toBe(false);
    const entry = splitRequests([row as RowToWrite], 500, 5_000_000)[0]![0]!;
    expect(JSON.parse(entry.json.toString())).toMatchObject({
      insertId: 't:0:7',
      json: { f: 'Infinity', fs: ['-Infinity', 1.5], meta: { w: '-Infinity' } },
    });
  });
});

describe('assignment', () => {
  test('the hash is stable and spreads partitions over tasks', () => {
    expect(stableHash('orders:0')).toBe(stableHash('orders:0'));
    expect(stableHash('orders:0')).not.toBe(stableHash('orders:1'));
    const partitions = Array.from({ length: 64 }, (_, partition) => ({ topic: 'orders', partition }));
    const sizes = [0, 1, 2, 3].map((i) => ownedBy(partitions, i, 4).length);
    expect(sizes.reduce((a, b) => a + b)).toBe(64);
    expect(Math.min(...sizes)).toBeGreaterThan(5);
  });

  test("each topic's partitions are dealt evenly: no task prefers two more than another", () => {
    // Topic names whose partitions, each hashed apart, split 3 / 5 / 5 / 3 (16 over 4 tasks) and
    // 3 / 1 / 2 (6 over 3): an execution lasts as long as its busiest task.
    for (const topic of ['bench-mx6jipzn-tasks', 'cdc.public.customers', 'orders', 'events', 'payments']) {
      for (const [count, tasks] of [
        [16, 4],
        [6, 3],
        [12, 4],
        [5, 2],
        [3, 4],
        [1000, 7],
      ] as const) {
        const partitions = Array.from({ length: count }, (_, partition) => ({ topic, partition }));
        const sizes = Array.from({ length: tasks }, (_, i) => ownedBy(partitions, i, tasks).length);
        expect(
          sizes.reduce((a, b) => a + b),
          `${topic} ${count}/${tasks}`,
        ).toBe(count);
        expect(
          Math.max(...sizes) - Math.min(...sizes),
          `${topic} ${count}/${tasks}: ${sizes}`,
        ).toBeLessThanOrEqual(1);
      }
    }
  });

  test("a topic that gains partitions moves none of those it had; topics' remainders start at different tasks", () => {
    const task = (topic: string, partition: number) => preferredTask({ topic, partition }, 4);
    for (let p = 0; p < 6; p++) expect(task('orders', p)).toBe((task('orders', 0) + p) % 4);
    const starts = new Set(
      ['orders', 'events', 'payments', 'refunds', 'users', 'carts'].map((t) => task(t, 0)),
    );
    expect(starts.size).toBeGreaterThan(1);
  });
});

describe('retry', () => {
  test('backoff grows, is capped and jittered', () => {
    const policy = { attempts: 10, initialDelayMs: 100, maxDelayMs: 1000 };
    expect(backoffDelay(policy, 1, () => 0)).toBe(50);
    expect(backoffDelay(policy, 1, () => 1)).toBe(100);
    expect(backoffDelay(policy, 3, () => 1)).toBe(400);
    expect(backoffDelay(policy, 9, () => 1)).toBe(1000);
  });

  test('retries only retriable errors, up to the attempts', async () => {
    const policy = { attempts: 3, initialDelayMs: 1, maxDelayMs: 2 };
    let calls = 0;
    await expect(
      withRetry(policy, async () => {
        calls++;
        throw new DrainError('flaky', { retriable: true });
      }),
    ).rejects.toThrow('flaky');
    expect(calls).toBe(3);
    calls = 0;
    await expect(
      withRetry(policy, async () => {
        calls++;
        throw new TypeError('bug');
      }),
    ).rejects.toThrow('bug');
    expect(calls).toBe(1);
    expect(
      await withRetry(policy, async (attempt) =>
        attempt < 2 ? Promise.reject(new DrainError('x', { retriable: true })) : 'ok',
      ),
    ).toBe('ok');
  });

  test("waits between attempts on the policy's timers: a fake clock's, with no wall time", async () => {
    const clock = createFakeClock();
    const policy = { attempts: 4, initialDelayMs: 1_000, maxDelayMs: 60_000, timers: clock.timers };
    const triedAt: number[] = [];
    const outcome = withRetry(policy, async (attempt) => {
      triedAt.push(clock.now());
      if (attempt < 4) throw new DrainError('flaky', { retriable: true });
      return 'ok';
    });
    expect(await clock.run(outcome, 100)).toBe('ok');
    // Backoff with full jitter: each wait is between half and all of 1 s, 2 s, 4 s.
    const waits = triedAt.slice(1).map((at, i) => at - triedAt[i]!);
    expect(waits).toHaveLength(3);
    waits.forEach((wait, i) => {
      expect(wait).toBeGreaterThanOrEqual(500 * 2 ** i);
      expect(wait).toBeLessThanOrEqual(1_000 * 2 ** i + 100);
    });
    expect(clock.pending()).toBe(0);
  });
});

describe('dead-letter message', () => {
  test('carries the original value and its origin as attributes', () => {
    const r = { ...record('orders', 3, 17, '{bad'), key: Buffer.from('key-1') };
    const message = deadLetterMessage(
      { record: r, kind: 'decode', message: 'value is not UTF-8 JSON' },
      { pipeline: 'p', execution: 'e' },
    );
    expect(message.data.toString()).toBe('{bad');
    expect(message.attributes).toEqual({
      pipeline: 'p',
      source_topic: 'orders',
      source_partition: '3',
      source_offset: '17',
      source_timestamp: new Date(r.timestamp).toISOString(),
      key_base64: Buffer.from('key-1').toString('base64'),
      error_kind: 'decode',
      error_message: 'value is not UTF-8 JSON',
      execution: 'e',
    });
  });

  test('attribute values stay within 1024 bytes, cut on a character boundary', () => {
    const cut = truncateUtf8('é'.repeat(2000), 1024);
    expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(1024);
    expect(cut.endsWith('...')).toBe(true);
    expect(cut).not.toContain('\uFFFD');
  });

  test('a value too large for Pub/Sub keeps as much as fits, with its full size and hash, as oversize', () => {
    const big = Buffer.alloc(10 * 1024 * 1024 + 5, 0x61);
    const message = deadLetterMessage(
      { record: { ...record('t', 0, 1, ''), value: big }, kind: 'oversize', message: 'too big' },
      { pipeline: 'p', execution: 'e' },
    );
    expect(message.data.length).toBe(9 * 1024 * 1024);
    expect(message.attributes).toMatchObject({ error_kind: 'oversize', value_size: String(big.length) });
    expect(message.attributes.value_sha256).toMatch(/^[0-9a-f]{64}$/);
  });

  test('Kafka headers travel as attributes where they fit', () => {
    const headers: Record<string, string> = { trace: 'abc', huge: 'x'.repeat(2000) };
    const message = deadLetterMessage(
      { record: { ...record('t', 0, 1, '{}'), headers }, kind: 'decode', message: 'm' },
      { pipeline: 'p', execution: 'e' },
    );
    expect(message.attributes).toMatchObject({ header_trace: 'abc', headers_dropped: '1' });
    expect(message.attributes.header_huge).toBeUndefined();
  });
});
