/**
 * A real Debezium: the PostgreSQL connector 3.6.1.Final on Kafka Connect standalone (jars from Maven
 * Central, fetched by the stack script), reading the stack's PostgreSQL (wal_level=logical) through
 * pgoutput, writing with Kafka Connect's JSON converter. One worker per call, its offsets in a temp dir;
 * psql (PostgreSQL's own client) for the source side.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from './producers.js';
import { stackEnv } from './stack.js';

const env = () => stackEnv() as unknown as Record<string, string>;

/** psql as the superuser on the stack's PostgreSQL: unaligned, tuples only, `|`-separated. */
export async function psql(database: string, sql: string): Promise<string> {
  const { KBD_PG_BIN, KBD_POSTGRES_PORT } = env();
  return run(join(KBD_PG_BIN!, 'psql'), [
    '-h',
    '127.0.0.1',
    '-p',
    KBD_POSTGRES_PORT!,
    '-U',
    'postgres',
    '-d',
    database,
    '-v',
    'ON_ERROR_STOP=1',
    '-At',
    '-c',
    sql,
  ]);
}

export async function createDatabase(name: string): Promise<void> {
  await psql('postgres', `CREATE DATABASE ${name}`);
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

export interface Connect {
  readonly child: ChildProcess;
  readonly log: () => string;
  stop(): Promise<void>;
}

/** Starts a Connect standalone worker running Debezium's PostgreSQL connector on `tables`. */
export async function startDebezium(options: {
  readonly database: string;
  readonly topicPrefix: string;
  readonly tables: readonly string[];
  readonly partitions: number;
}): Promise<Connect> {
  const e = env();
  const dir = mkdtempSync(join(tmpdir(), 'kbd-connect-'));
  const worker = join(dir, 'worker.properties');
  const connector = join(dir, 'connector.properties');
  writeFileSync(
    worker,
    [
      `bootstrap.servers=${e.KAFKA_BROKERS}`,
      'key.converter=org.apache.kafka.connect.json.JsonConverter',
      'value.converter=org.apache.kafka.connect.json.JsonConverter',
      'key.converter.schemas.enable=true',
      'value.converter.schemas.enable=true',
      `offset.storage.file.filename=${join(dir, 'offsets')}`,
      'offset.flush.interval.ms=1000',
      `listeners=http://127.0.0.1:${await freePort()}`,
      '',
    ].join('\n'),
  );
  const slot = options.topicPrefix.replace(/[^a-z0-9_]/g, '_');
  writeFileSync(
    connector,
    [
      `name=${options.topicPrefix}`,
      'connector.class=io.debezium.connector.postgresql.PostgresConnector',
      'tasks.max=1',
      'database.hostname=127.0.0.1',
      `database.port=${e.KBD_POSTGRES_PORT}`,
      'database.user=postgres',
      'database.password=unused',
      `database.dbname=${options.database}`,
      `topic.prefix=${options.topicPrefix}`,
      'plugin.name=pgoutput',
      `slot.name=${slot}`,
      `publication.name=${slot}_pub`,
      'publication.autocreate.mode=filtered',
      `table.include.list=${options.tables.join(',')}`,
      'snapshot.mode=initial',
      // The broker creates no topic by itself: Connect does, with these settings.
      'topic.creation.default.replication.factor=1',
      `topic.creation.default.partitions=${options.partitions}`,
      '',
    ].join('\n'),
  );
  const log4j = join(dir, 'log4j2.properties');
  writeFileSync(
    log4j,
    [
      'rootLogger.level=INFO',
      'rootLogger.appenderRef.stdout.ref=STDOUT',
      'appender.stdout.type=Console',
      'appender.stdout.name=STDOUT',
      'appender.stdout.layout.type=PatternLayout',
      'appender.stdout.layout.pattern=%d %p %c{1} %m%n',
      '',
    ].join('\n'),
  );
  const child = spawn(
    'java',
    [
      '-Xmx512m',
      `-Dlog4j2.configurationFile=${log4j}`,
      '-cp',
      `${e.KBD_CONNECT_LIBS}/*`,
      'org.apache.kafka.connect.cli.ConnectStandalone',
      worker,
      connector,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout!.on('data', (c: Buffer) => {
    output = (output + c.toString()).slice(-200_000);
  });
  child.stderr!.on('data', (c: Buffer) => {
    output = (output + c.toString()).slice(-200_000);
  });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  return {
    child,
    log: () => output,
    async stop() {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
