import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import {
  type StackEnv,
  stackDir as sharedStackDir,
  stackEnv as sharedStackEnv,
} from '../../stack/stack-env.js';

export const root = join(import.meta.dirname, '..', '..');
export { type StackEnv, stackDir } from '../../stack/stack-env.js';

/** The BigQuery emulator this test file uses, once `useOwnBigQuery` gave it one: a lane's endpoints. */
let lane: { readonly service: string; readonly env: Partial<StackEnv> } | undefined;
/** The stack of this file's own, once `useOwnStack` started one: how the stack script reaches it. */
let ownStack: { readonly scriptEnv: Record<string, string>; readonly dir: string } | undefined;

/**
 * Where the local stack runs, as `stack/stack.sh up` wrote it, with this file's own BigQuery emulator in place
 * of the stack's once `useOwnBigQuery` started one.
 */
export function stackEnv(): StackEnv {
  const env = ownStack === undefined ? sharedStackEnv() : readEnvFile(join(ownStack.dir, 'env'));
  return lane === undefined ? env : { ...env, ...lane.env };
}

function readEnvFile(file: string): StackEnv {
  return parseEnv(readFileSync(file, 'utf8')) as unknown as StackEnv;
}

/**
 * A second stack for this file alone (`.stack/<name>`: Kafka, Firestore, Pub/Sub and BigQuery on ports of
 * its own, 10,000 above the first's), for a file that freezes and kills services: it can then run beside the
 * other files, whose services it never touches. Started if it is not running (the first time, a few seconds
 * of JVMs starting), its suite topics pruned; `stackEnv()` then answers with it, and `ownStackScriptEnv()`
 * is what `stack/stack.sh freeze|thaw|kill|up` need to act on it. Stopped after the file unless
 * KBD_KEEP_STACK=1.
 */
export function useOwnStack(name: string): void {
  const dir = join(sharedStackDir, name);
  const offset = 10_000;
  // The first stack's ports (its variables, else stack.sh's defaults), each 10,000 higher.
  const ports: Record<string, number> = {
    KBD_KAFKA_PORT: 19092,
    KBD_KAFKA_CONTROLLER_PORT: 19093,
    KBD_KAFKA_SASL_PORT: 19094,
    KBD_KAFKA_OAUTH_PORT: 19095,
    KBD_KAFKA_PLAIN_PORT: 19098,
    KBD_KAFKA_MTLS_PORT: 19099,
    KBD_FIRESTORE_PORT: 18080,
    KBD_PUBSUB_PORT: 18085,
    KBD_BIGQUERY_PORT: 19050,
    KBD_BIGQUERY_GRPC_PORT: 19060,
  };
  const scriptEnv: Record<string, string> = {
    KBD_STACK_DIR: dir,
    KBD_STACK_SERVICES: 'kafka firestore pubsub bigquery',
    ...Object.fromEntries(
      Object.entries(ports).map(([k, port]) => [k, String(Number(process.env[k] ?? port) + offset)]),
    ),
  };
  const script = join(root, 'stack', 'stack.sh');
  const options = {
    env: { ...process.env, ...scriptEnv },
    stdio: ['ignore', 'ignore', 'inherit'] as ('ignore' | 'inherit')[],
    timeout: 300_000,
  };
  execFileSync('bash', [script, 'up'], options);
  execFileSync('bash', [script, 'prune'], options);
  ownStack = { scriptEnv, dir };
  afterAll(() => {
    if (process.env.KBD_KEEP_STACK !== '1') execFileSync('bash', [script, 'down'], options);
  });
}

/** The environment `stack/stack.sh` needs to act on this file's own stack (none: the shared one). */
export function ownStackScriptEnv(): Record<string, string> {
  return ownStack?.scriptEnv ?? {};
}

/**
 * A fresh BigQuery emulator for this test file alone: lane N of the stack (`stack/stack.sh lane N`), N the
 * first lane no running file holds, so that files running side by side never share one, and a file's timing
 * does not depend on the data the files before it left (the emulator slows down as data piles up in it).
 * Stopped when the file ends. Returns the lane's service name, for `stack/stack.sh freeze|thaw|kill`.
 */
export function useOwnBigQuery(): string {
  // A file on a stack of its own has its own emulator already.
  if (ownStack !== undefined) return bigqueryService();
  const n = claimLane();
  const script = join(root, 'stack', 'stack.sh');
  const output = execFileSync('bash', [script, 'lane', String(n)], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    timeout: 120_000,
  });
  lane = { service: `bigquery-lane${n}`, env: parseEnv(output) as Partial<StackEnv> };
  afterAll(() => {
    execFileSync('bash', [script, 'kill', `bigquery-lane${n}`], { stdio: 'ignore', timeout: 60_000 });
  });
  return lane.service;
}

/**
 * The first lane free for this process: a lock directory (`.stack/lanes/N`, made atomically) holding the
 * pid of the test process that claimed it, released when the file ends; a lock whose process is gone is
 * taken over. (Vitest's VITEST_POOL_ID was seen given to two files at once.)
 */
function claimLane(): number {
  const locks = join(sharedStackDir, 'lanes');
  mkdirSync(locks, { recursive: true });
  for (let n = 1; n <= 99; n++) {
    const lock = join(locks, String(n));
    if (!tryLock(lock)) continue;
    afterAll(() => rmSync(lock, { recursive: true, force: true }));
    return n;
  }
  throw new Error(`no free lane of the BigQuery emulator under ${locks}`);
}

function tryLock(lock: string): boolean {
  try {
    mkdirSync(lock);
  } catch {
    const owner = Number(readFileSync(join(lock, 'pid'), { encoding: 'utf8', flag: 'a+' }));
    // Another's lock being made (no pid yet), or held by a live process: not this one.
    if (!Number.isInteger(owner) || owner <= 0 || alive(owner)) return false;
    rmSync(lock, { recursive: true, force: true });
    try {
      mkdirSync(lock);
    } catch {
      return false;
    }
  }
  writeFileSync(join(lock, 'pid'), String(process.pid));
  return true;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function parseEnv(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const at = line.indexOf('=');
    if (at > 0) env[line.slice(0, at)] = line.slice(at + 1);
  }
  return env;
}

/** The stack service behind this file's BigQuery: its own lane, or the stack's emulator. */
export function bigqueryService(): string {
  return lane?.service ?? 'bigquery';
}
/**
 * A name no other test uses (topics, datasets, pipelines, Pub/Sub topics), behind the suite's prefix
 * `kbdtest_`: `stack/stack.sh prune` deletes the Kafka topics so named, and only those.
 */
export function uniqueName(prefix: string): string {
  return `kbdtest_${prefix}_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
}

/** Google's Storage Write client (managedwriter) pointed at the local emulator's gRPC port. */
export async function stackWriter() {
  const [{ managedwriter }, grpc] = await Promise.all([
    import('@google-cloud/bigquery-storage'),
    import('@grpc/grpc-js'),
  ]);
  const env = stackEnv() as unknown as Record<string, string>;
  return new managedwriter.WriterClient({
    projectId: env.GOOGLE_CLOUD_PROJECT,
    servicePath: '127.0.0.1',
    port: Number(env.KBD_BIGQUERY_GRPC_PORT),
    sslCreds: grpc.credentials.createInsecure(),
  });
}

/** The official Google clients pointed at the local stack. */
export async function stackClients() {
  const { createGoogleClients } = await import('../../functions/google/clients.js');
  const env = stackEnv();
  return createGoogleClients({
    project: env.GOOGLE_CLOUD_PROJECT,
    emulators: { firestore: env.FIRESTORE_EMULATOR_HOST, pubsub: env.PUBSUB_EMULATOR_HOST },
    bigquery: {
      apiEndpoint: env.BIGQUERY_API_ENDPOINT,
      location: null,
      storageEndpoint: env.BIGQUERY_STORAGE_ENDPOINT ?? null,
    },
  });
}
