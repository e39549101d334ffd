/**
 * The fault harness: what the services around the drain do to it in production, done to the local stack
 * while a run drains. Freeze a service (SIGSTOP: it keeps its sockets and answers nothing), thaw it, kill
 * it hard and start it again (`stack/stack.sh freeze|thaw|kill|up`); and, for BigQuery, a TCP proxy that
 * resets or swallows connections (in front of the Storage Write API's gRPC port) next to the HTTP proxy of
 * fault-proxy.ts that answers 5xx (in front of its REST API).
 */
import { execFile, execFileSync } from 'node:child_process';
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { testKafka } from './kafka.js';
import { bigqueryService, ownStackScriptEnv, root } from './stack.js';

export type StackService = 'kafka' | 'firestore' | 'pubsub' | 'bigquery';

const stackScript = join(root, 'stack', 'stack.sh');

/** Runs `stack/stack.sh COMMAND [SERVICE]` without blocking the test's event loop (a run's output flows on). */
export async function stackCommand(command: 'freeze' | 'thaw' | 'kill' | 'up', service?: StackService) {
  const name = service === 'bigquery' ? bigqueryService() : service;
  await promisify(execFile)('bash', [stackScript, command, ...(name === undefined ? [] : [name])], {
    env: { ...process.env, ...ownStackScriptEnv() },
    timeout: 240_000,
  });
}

export const freeze = (service: StackService) => stackCommand('freeze', service);
export const thaw = (service: StackService) => stackCommand('thaw', service);

/** Thaws every service (a test that failed while one was frozen must not freeze the next ones). */
export function thawAll(): void {
  for (const service of ['kafka', 'firestore', 'pubsub', bigqueryService()]) {
    try {
      execFileSync('bash', [stackScript, 'thaw', service], {
        stdio: 'ignore',
        env: { ...process.env, ...ownStackScriptEnv() },
      });
    } catch {
      // not running: nothing to thaw
    }
  }
}

/** Kills the service with SIGKILL (no shutdown at all) and starts it again, waiting until it is healthy. */
export async function killAndRestart(service: StackService): Promise<void> {
  await stackCommand('kill', service);
  await stackCommand('up');
}

export type TcpMode = 'pass' | 'reset' | 'blackhole';

export interface TcpFaultProxy {
  /** `127.0.0.1:port`. */
  readonly address: string;
  /** `reset`: every open connection is reset and new ones are reset at once; `blackhole`: accepted, never answered. */
  setMode(mode: TcpMode): void;
  close(): Promise<void>;
}

export async function startTcpFaultProxy(target: string): Promise<TcpFaultProxy> {
  const [host, port] = target.split(':') as [string, string];
  let mode: TcpMode = 'pass';
  const open = new Set<Socket>();
  const server = createServer((client) => {
    open.add(client);
    client.on('close', () => open.delete(client));
    client.on('error', () => {});
    if (mode === 'reset') {
      client.resetAndDestroy();
      return;
    }
    if (mode === 'blackhole') return;
    const upstream = connect(Number(port), host);
    open.add(upstream);
    upstream.on('close', () => {
      open.delete(upstream);
      client.destroy();
    });
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    setMode(next) {
      mode = next;
      if (next === 'reset') for (const socket of open) socket.resetAndDestroy();
    },
    async close() {
      for (const socket of open) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * What the topic really holds, read back from Kafka (the ground truth, whatever a producer believed through
 * the faults): per partition, per offset, whether the value is malformed (not JSON).
 */
export async function readTopic(topic: string): Promise<Map<number, Map<number, boolean>>> {
  const log = new Map<number, Map<number, boolean>>();
  for (const [partition, records] of await readTopicRecords(topic)) {
    const offsets = new Map<number, boolean>();
    for (const r of records) {
      let malformed = true;
      try {
        JSON.parse(r.value?.toString() ?? '');
        malformed = false;
      } catch {}
      offsets.set(r.offset, malformed);
    }
    log.set(partition, offsets);
  }
  return log;
}

/** Every record the topic holds, per partition in offset order, read back with kafkajs (committed only). */
export async function readTopicRecords(
  topic: string,
): Promise<Map<number, { offset: number; key: Buffer | null; value: Buffer | null }[]>> {
  const kafka = testKafka();
  const admin = kafka.admin();
  await admin.connect();
  const ends = await admin.fetchTopicOffsets(topic);
  await admin.disconnect();
  const log = new Map<number, { offset: number; key: Buffer | null; value: Buffer | null }[]>(
    ends.map((e) => [e.partition, []]),
  );
  const remaining = new Set(ends.filter((e) => Number(e.high) > Number(e.low)).map((e) => e.partition));
  if (remaining.size === 0) return log;
  const high = new Map(ends.map((e) => [e.partition, Number(e.high)]));
  const consumer = kafka.consumer({ groupId: `read-${topic}-${Date.now()}`, readUncommitted: false });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await new Promise<void>((resolve, reject) => {
    consumer
      .run({
        eachMessage: async ({ partition, message }) => {
          const offset = Number(message.offset);
          log.get(partition)!.push({ offset, key: message.key, value: message.value });
          if (offset + 1 >= high.get(partition)!) {
            remaining.delete(partition);
            if (remaining.size === 0) resolve();
          }
        },
      })
      .catch(reject);
  });
  await consumer.disconnect();
  for (const records of log.values()) records.sort((a, b) => a.offset - b.offset);
  return log;
}
