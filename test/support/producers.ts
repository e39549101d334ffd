/**
 * Producers no one here wrote: kcat (librdkafka, installed by the stack script from Debian) and Kafka's
 * own Java tools from the broker's jars. And a look at what they wrote, from Kafka's own log dump, so
 * that a test knows the codec really was used.
 */
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { stackDir, stackEnv } from './stack.js';

export type Codec = 'none' | 'gzip' | 'snappy' | 'lz4' | 'zstd';

function stackValue(name: string): string {
  const value = (stackEnv() as unknown as Record<string, string | undefined>)[name];
  if (value === undefined)
    throw new Error(`${name} is not in the stack's env file: run \`npm run stack:up\``);
  return value;
}

/** Runs a command to its end, feeding it `input`; rejects with its stderr when it fails. */
export function run(command: string, args: string[], input = '', timeoutMs = 60_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(stdout);
      else reject(new Error(`${command} ${args.join(' ')} exited ${code ?? signal}:\n${stderr}`));
    });
    child.stdin.end(input);
  });
}

/**
 * kcat as a producer: one record per line of `values` (JSON without newlines), all to one partition,
 * each with the `headers` given.
 */
export async function kcatProduce(
  topic: string,
  partition: number,
  values: readonly string[],
  codec: Codec,
  headers: Readonly<Record<string, string>> = {},
): Promise<void> {
  await run(
    'kcat',
    [
      '-b',
      stackEnv().KAFKA_BROKERS,
      '-P',
      '-t',
      topic,
      '-p',
      String(partition),
      '-z',
      codec,
      '-X',
      'linger.ms=100',
      ...Object.entries(headers).flatMap(([k, v]) => ['-H', `${k}=${v}`]),
    ],
    `${values.join('\n')}\n`,
  );
}

/** kcat as a producer of keyed records; a `null` value is sent as a tombstone (`-Z`). */
export async function kcatProduceKeyed(
  topic: string,
  partition: number,
  records: readonly { key: string; value: string | null }[],
): Promise<void> {
  const lines = records.map((r) => `${r.key}\t${r.value ?? ''}`);
  await run(
    'kcat',
    ['-b', stackEnv().KAFKA_BROKERS, '-P', '-t', topic, '-p', String(partition), '-K', '\t', '-Z'],
    `${lines.join('\n')}\n`,
  );
}

/** Kafka's own console producer (the Java client), one record per line, compressed with `codec`. */
export async function javaProduce(topic: string, values: readonly string[], codec: Codec): Promise<void> {
  await run(
    'java',
    [
      '-cp',
      `${stackValue('KBD_KAFKA_LIBS')}/*`,
      'org.apache.kafka.tools.ConsoleProducer',
      '--bootstrap-server',
      stackEnv().KAFKA_BROKERS,
      '--topic',
      topic,
      '--compression-codec',
      codec,
      '--producer-property',
      'linger.ms=100',
    ],
    `${values.join('\n')}\n`,
  );
}

/** Runs one of Kafka's Java tools (a class in the broker's jars) to its end. */
export function kafkaTool(mainClass: string, args: string[], timeoutMs = 120_000): Promise<string> {
  return run('java', ['-cp', `${stackValue('KBD_KAFKA_LIBS')}/*`, mainClass, ...args], '', timeoutMs);
}

/** The compression codec of every record batch in a partition's log, as Kafka's DumpLogSegments reads it. */
export async function batchCodecs(topic: string, partition: number): Promise<string[]> {
  const dir = join(stackDir, 'kafka', 'data', `${topic}-${partition}`);
  const segments = readdirSync(dir)
    .filter((f) => f.endsWith('.log'))
    .map((f) => join(dir, f));
  const dump = await kafkaTool('kafka.tools.DumpLogSegments', ['--files', segments.join(',')]);
  return [...dump.matchAll(/compresscodec: (\w+)/g)].map((m) => m[1]!.toLowerCase());
}

/** Offsets of a partition's records as kcat reads them, under an isolation level of our choice. */
export async function kcatOffsets(
  topic: string,
  partition: number,
  isolation: 'read_committed' | 'read_uncommitted',
): Promise<number[]> {
  const out = await run('kcat', [
    '-b',
    stackEnv().KAFKA_BROKERS,
    '-C',
    '-t',
    topic,
    '-p',
    String(partition),
    '-o',
    'beginning',
    '-e',
    '-q',
    '-X',
    `isolation.level=${isolation}`,
    '-f',
    '%o\\n',
  ]);
  return out
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map(Number);
}

/**
 * Python's confluent-kafka as the producer, with its schema-registry serializers (AvroSerializer,
 * ProtobufSerializer, JSONSerializer) against the stack's registry: the wire format as real producers
 * write it. `values` is a Python expression (a list literal; datetime, Decimal, UUID in scope).
 */
export async function pythonProduce(spec: {
  topic: string;
  format: 'avro' | 'protobuf' | 'json-schema' | 'raw-avro' | 'raw';
  schema?: string;
  message?: string;
  values: string;
  partition?: number;
  registry?: string;
  /** The records' CreateTime (epoch ms) instead of the producer's clock. */
  timestamp?: number;
  /** Subjects named `{topic}-{record full name}` (Avro): several record types in one topic. */
  subject_strategy?: 'topic_record';
  /** Headers every record carries. */
  headers?: Record<string, string>;
  /**
   * Protobuf: the schema text is registered as it is (as Java's serializer registers `map<K, V>`; Python's
   * would register its map entries as plain repeated messages), and the serializer uses that version.
   */
  registered?: boolean;
}): Promise<number> {
  const env = stackEnv() as unknown as Record<string, string>;
  const out = await run(
    stackValue('KBD_PYTHON'),
    [join(import.meta.dirname, 'py', 'confluent_produce.py')],
    JSON.stringify({ brokers: env.KAFKA_BROKERS, registry: env.SCHEMA_REGISTRY_URL, ...spec }),
    120_000,
  );
  return Number(out.trim());
}
