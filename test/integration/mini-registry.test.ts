/**
 * The stack's fallback registry (stack/mini-registry.mjs, used where Karapace is not at hand): Python's
 * confluent-kafka serializers register against it as against a real registry, and the drain's registry
 * client reads back what they registered, compiled as the drain compiles it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { registryFormats } from '../../functions/formats/registry.js';
import { createSchemaRegistry, SchemaNotFoundError } from '../../functions/formats/schema-registry.js';
import { createTopic } from '../support/kafka.js';
import { pythonProduce } from '../support/producers.js';
import { root, uniqueName } from '../support/stack.js';

let child: ChildProcess;
let url: string;

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

beforeAll(async () => {
  const port = await freePort();
  child = spawn(
    process.execPath,
    [
      join(root, 'stack', 'mini-registry.mjs'),
      String(port),
      join(tmpdir(), `${uniqueName('registry')}.json`),
    ],
    {
      stdio: 'ignore',
    },
  );
  url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 50; i++) {
    if ((await fetch(`${url}/subjects`).catch(() => undefined))?.ok) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('the minimal registry did not start');
});
afterAll(() => {
  child.kill();
});

describe('the minimal registry', () => {
  test("Python's Avro and Protobuf serializers register against it; the drain reads what they registered", async () => {
    const topic = uniqueName('mini-registry');
    await createTopic(topic, 1);
    const avro = { type: 'record', name: 'User', fields: [{ name: 'id', type: 'long' }] };
    await pythonProduce({
      topic,
      registry: url,
      format: 'avro',
      schema: JSON.stringify(avro),
      values: '[{"id": 1}]',
      partition: 0,
    });
    // The same schema again registers nothing new: the serializer finds its id.
    await pythonProduce({
      topic,
      registry: url,
      format: 'avro',
      schema: JSON.stringify(avro),
      values: '[{"id": 2}]',
      partition: 0,
    });
    const registry = createSchemaRegistry({ url });
    const latest = await registry.subjectVersion(`${topic}-value`, 'latest');
    expect(latest).toMatchObject({ id: 1, version: 1, schemaType: 'AVRO' });
    expect((await registryFormats.avro.compile(latest, registry)).fields).toEqual([
      { name: 'id', type: 'INT64', mode: 'REQUIRED' },
    ]);

    const protoTopic = uniqueName('mini-registry-proto');
    await createTopic(protoTopic, 1);
    await pythonProduce({
      topic: protoTopic,
      registry: url,
      format: 'protobuf',
      message: 'Event',
      schema:
        'syntax = "proto3"; import "google/protobuf/timestamp.proto"; message Event { string id = 1; google.protobuf.Timestamp at = 2; }',
      values: '[{"id": "a", "at": "2024-01-01T00:00:00Z"}]',
      partition: 0,
    });
    const proto = await registry.subjectVersion(`${protoTopic}-value`, 'latest');
    expect(proto.schemaType).toBe('PROTOBUF');
    expect(
      (await registryFormats.protobuf.compile(proto, registry)).fields.map((f) => `${f.name}:${f.type}`),
    ).toEqual(['id:STRING', 'at:TIMESTAMP']);

    await expect(registry.schemaById(999)).rejects.toBeInstanceOf(SchemaNotFoundError);
  });
});
