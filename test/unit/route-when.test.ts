import { describe, expect, test } from 'vitest';
import { whenWriteModes, writeModeNames } from '../../functions/config/bigquery.js';
import { parseConfig } from '../../functions/config/config.js';
import { groupRoutes, groupTables } from '../../functions/config/route-groups.js';
import { parseWhen } from '../../functions/config/route-when.js';
import { parseRoutes, resolveTopics, routesOfTopic, tableName } from '../../functions/config/routes.js';
import { ConfigError } from '../../functions/kernel/errors.js';
import type { BatchToWrite, Lease, Writer } from '../../functions/kernel/ports.js';
import type { KafkaRecord } from '../../functions/kernel/records.js';
import { fanOutWriters } from '../../functions/modes/fan-out.js';
import { writeModeNamed } from '../../functions/modes/registry.js';
import { classifyEach } from '../../functions/records/classify.js';
import { createRecordRouter } from '../../functions/records/record-router.js';

const defaults = { dataset: 'ds', metadata: { headers: false, keyText: false } };

function routes(list: object[]) {
  return parseRoutes(JSON.stringify(list), '/r/routes.json', defaults);
}

function record(
  offset: number,
  value: unknown,
  headers: Record<string, string> = {},
  topic = 't',
): KafkaRecord {
  return {
    topic,
    partition: 0,
    offset,
    timestamp: 0,
    key: null,
    value: value === null ? null : Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)),
    headers,
  };
}

describe('parseWhen', () => {
  test('a header, a field path, a record name', () => {
    expect(parseWhen({ header: { type: 'order' } })).toEqual({
      kind: 'header',
      name: 'type',
      value: 'order',
    });
    expect(parseWhen({ field: { 'meta.kind': 3 } })).toEqual({
      kind: 'field',
      path: ['meta', 'kind'],
      value: 3,
    });
    expect(parseWhen({ recordName: 'acme.Order' })).toEqual({ kind: 'recordName', name: 'acme.Order' });
  });

  test.each([
    [{}, 'must be'],
    [{ header: { a: 'x' }, field: { b: 1 } }, 'must be'],
    [{ header: { a: 1 } }, "header's value must be a string"],
    [{ header: {} }, 'one entry'],
    [{ field: { 'a..b': 1 } }, 'not a field path'],
    [{ field: { a: { x: 1 } } }, "field's value must be"],
    [{ recordName: 'not a name' }, 'full name'],
    [{ tag: 'x' }, 'must be'],
  ])('%j is refused, saying why', (when, message) => {
    expect(parseWhen(when)).toContain(message);
  });

  test('in a routes file: a field needs JSON values, a record name the registry', () => {
    const refused = (list: object[]) => {
      try {
        routes(list);
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        return (error as Error).message;
      }
      throw new Error('expected a ConfigError');
    };
    expect(
      refused([{ topics: ['t'], table: 'a', valueFormat: 'avro', when: { field: { kind: 'a' } } }]),
    ).toContain('route 1: "when": {"field": ...} reads JSON values');
    expect(
      refused([{ topics: ['t'], table: 'a', schemaFile: 's.json', when: { recordName: 'x.Y' } }]),
    ).toContain('needs values in the wire format');
    expect(refused([{ topics: ['t'], table: 'a', schemaFile: 's.json', when: 'x' }])).toContain(
      'route 1: "when" must be',
    );
  });
});

describe('topics shared by `when`', () => {
  const list = routes([
    { topics: ['t'], table: 'orders', schemaFile: 's.json', when: { header: { kind: 'order' } } },
    { topics: ['t', 'u'], table: 'refunds', schemaFile: 's.json', when: { field: { kind: 'refund' } } },
    { topics: ['/.*/'], table: 'rest', schemaFile: 's.json' },
    { topics: ['t'], table: 'never', schemaFile: 's.json' },
    { topics: ['v'], table: 'alone', schemaFile: 's.json' },
  ]);

  test('a topic goes to its routes up to the first without `when`', () => {
    expect(routesOfTopic(list, 't').map(tableName)).toEqual(['ds.orders', 'ds.refunds', 'ds.rest']);
    expect(routesOfTopic(list, 'u').map(tableName)).toEqual(['ds.refunds', 'ds.rest']);
    expect(routesOfTopic(list, 'v').map(tableName)).toEqual(['ds.rest']);
    const resolved = resolveTopics(list, [], ['t', 'u', 'v', 'w']);
    expect(resolved.map((r) => [tableName(r.route), r.topics])).toEqual([
      ['ds.orders', ['t']],
      ['ds.refunds', ['t', 'u']],
      ['ds.rest', ['t', 'u', 'v', 'w']],
      ['ds.never', []],
      ['ds.alone', []],
    ]);
  });

  test('routes linked by a shared topic drain as one group; the others alone', () => {
    const two = routes([
      { topics: ['a'], table: 'x', schemaFile: 's.json', when: { header: { k: '1' } } },
      { topics: ['b'], table: 'solo', schemaFile: 's.json' },
      { topics: ['a', 'c'], table: 'y', schemaFile: 's.json', when: { header: { k: '2' } } },
      { topics: ['c'], table: 'z', schemaFile: 's.json' },
      { topics: ['a'], table: 'w', schemaFile: 's.json' },
    ]);
    const groups = groupRoutes(resolveTopics(two, [], ['a', 'b', 'c']));
    expect(groups.map((g) => [groupTables(g.members), g.topics])).toEqual([
      ['ds.x + ds.y + ds.z + ds.w', ['a', 'c']],
      ['ds.solo', ['b']],
    ]);
  });

  test('the router: the first matching `when` of the topic, else its route without one, else a dead letter', async () => {
    const members = routes([
      { topics: ['t'], table: 'orders', schemaFile: 's.json', when: { header: { kind: 'order' } } },
      {
        topics: ['t', 'u'],
        table: 'refunds',
        schemaFile: 's.json',
        when: { field: { 'meta.kind': 'refund' } },
      },
      { topics: ['u'], table: 'rest', schemaFile: 's.json' },
    ]);
    const router = createRecordRouter(members);
    const records = [
      record(0, { meta: { kind: 'refund' } }, { kind: 'order' }), // the first route's header wins
      record(1, { meta: { kind: 'refund' } }),
      record(2, { meta: { kind: 'other' } }), // t: no route takes it
      record(3, '{not json', { kind: 'order' }),
      record(4, { meta: { kind: 'refund' } }, {}, 'u'),
      record(5, { meta: { kind: 7 } }, {}, 'u'), // u: the route without `when`
      record(6, null), // a tombstone: no field to match
    ];
    const parts = await router.split(records);
    expect(parts.map((p) => p.map((r) => `${r.topic}${r.offset}`))).toEqual([
      ['t0', 't2', 't3', 't6'],
      ['t1', 'u4'],
      ['u5'],
    ]);
    expect(router.refusal(records[2]!)).toContain('no route of topic "t" takes this record');
    expect(router.refusal(records[6]!)).toBeDefined();
    expect(router.refusal(records[0]!)).toBeUndefined();
    expect(router.refusal(records[5]!)).toBeUndefined();
  });

  test('a record name read through the registry picks the route', async () => {
    const members = routes([
      { topics: ['t'], table: 'orders', valueFormat: 'avro', when: { recordName: 'acme.Order' } },
      { topics: ['t'], table: 'refunds', valueFormat: 'avro', when: { recordName: 'acme.Refund' } },
    ]);
    const prepared: number[] = [];
    const router = createRecordRouter(members, {
      prepare: async (rs) => {
        prepared.push(rs.length);
      },
      nameOf: (r) => r.value?.toString(),
    });
    const parts = await router.split([
      record(0, 'acme.Refund'),
      record(1, 'acme.Order'),
      record(2, 'acme.Other'),
    ]);
    expect(prepared).toEqual([3]);
    expect(parts.map((p) => p.map((r) => r.offset))).toEqual([[1, 2], [0]]);
    expect(router.refusal(parts[0]![1]!)).toBeDefined();
  });

  test("a group route's policy makes the records no route takes `schema` dead letters (tombstones stay tombstones)", async () => {
    const router = createRecordRouter(
      routes([{ topics: ['t'], table: 'a', schemaFile: 's.json', when: { header: { k: 'a' } } }]),
    );
    const records = [record(0, { id: 'x' }, { k: 'a' }), record(1, { id: 'y' }), record(2, null)];
    await router.split(records);
    const rows: number[] = [];
    const classified = await classifyEach(
      records,
      { tombstones: 'skip', refuse: router.refusal },
      new Date(0),
      (row) => rows.push(row.record.offset),
    );
    expect(rows).toEqual([0]);
    expect(classified.tombstones).toBe(1);
    expect(classified.letters.map((l) => [l.record.offset, l.kind])).toEqual([[1, 'schema']]);
  });

  test("the writers' fan-out: each route its part of the batch, side by side, the counts summed", async () => {
    const router = createRecordRouter(
      routes([
        { topics: ['t'], table: 'a', schemaFile: 's.json', when: { header: { k: 'a' } } },
        { topics: ['t'], table: 'b', schemaFile: 's.json' },
      ]),
    );
    const seen: string[] = [];
    const member = (name: string, filtered?: number): Writer => ({
      recover: async () => ({}),
      begin: async () => {},
      write: async (batch) => {
        seen.push(
          `${name}:${batch.records.map((r) => r.offset).join(',')}:${batch.fromOffset}-${batch.nextOffset}`,
        );
        return {
          rows: batch.records.length,
          deadLetters: 1,
          tombstones: 0,
          ...(filtered ? { filtered } : {}),
        };
      },
    });
    const writer = fanOutWriters([member('a', 2), member('b')], router);
    const batch: BatchToWrite = {
      lease: {} as Lease,
      fromOffset: 0,
      nextOffset: 4,
      records: [record(0, {}, { k: 'a' }), record(1, {}), record(2, {}, { k: 'a' }), record(3, {})],
    };
    expect(await writer.write(batch, new AbortController().signal)).toEqual({
      rows: 4,
      deadLetters: 2,
      tombstones: 0,
      filtered: 2,
    });
    expect(seen).toEqual(['a:0,2:0-4', 'b:1,3:0-4']);
  });
});

describe('the write modes that route one topic into several tables', () => {
  test('are those with a fan-out writer, and the config refuses the others at start, naming ROUTES_FILE', () => {
    for (const mode of writeModeNames)
      expect(writeModeNamed(mode).fanOut !== undefined, mode).toBe(whenWriteModes.includes(mode));
    const routesJson = JSON.stringify([
      { topics: ['t'], table: 'a', schemaFile: '/s.json', when: { header: { k: 'a' } } },
      { topics: ['t'], table: 'b', schemaFile: '/s.json' },
    ]);
    const env = {
      PIPELINE_ID: 'p',
      GOOGLE_CLOUD_PROJECT: 'proj',
      KAFKA_BROKERS: 'b:9092',
      DEAD_LETTER_TOPIC: 'dead-letters',
      BQ_DATASET: 'ds',
      ROUTES_FILE: '/etc/routes.json',
    };
    expect(parseConfig({ ...env, BQ_WRITE_MODE: 'merge' }, () => routesJson).routes).toHaveLength(2);
    expect(parseConfig({ ...env, BQ_WRITE_MODE: 'load' }, () => routesJson).routes).toHaveLength(2);
    for (const mode of ['cdc']) {
      const error = (() => {
        try {
          parseConfig({ ...env, BQ_WRITE_MODE: mode, CDC_PRIMARY_KEY: 'id' }, () => routesJson);
        } catch (e) {
          return e as ConfigError;
        }
        throw new Error('expected a ConfigError');
      })();
      expect(error).toBeInstanceOf(ConfigError);
      expect(error.message).toContain('ROUTES_FILE');
      expect(error.message).toContain(
        `need BQ_WRITE_MODE storage-write, merge, insert-all, load (${mode} writes a topic to one table)`,
      );
    }
  });
});
