/**
 * Faults of the services around the drain (#15), Jepsen-style, in the default write mode (storage-write).
 *
 * 1. A service that does not answer at all (frozen with SIGSTOP for the whole run) cannot keep a run alive
 *    past its budget + 10 s: the run exits 1 naming the service, and the next run, with the service back,
 *    drains everything.
 * 2. Each service failing in the middle of runs, under a live producer: the Kafka broker killed and
 *    restarted, or frozen; Firestore frozen (commits and lease renewals); Pub/Sub frozen (dead letters,
 *    alerts); BigQuery answering 503 on its REST API and resetting its gRPC connections for longer than a
 *    run retries; and two at once. Afterwards the crash matrix's checks hold against what Kafka really
 *    holds: every offset in the table or the error table, none twice, checkpoints never went back, ledgers
 *    chain, `verify` passes.
 *
 * KBD_FAULT_REPEATS (default 1) repeats each mid-run fault that many times per scenario, for longer runs;
 * KBD_FAULT_BUDGET (default 15) is those runs' DRAIN_BUDGET_SECONDS.
 */
import { afterEach, describe, expect, test } from 'vitest';
import type { GoogleClients } from '../../functions/google/clients.js';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.js';
import {
  freeze,
  killAndRestart,
  readTopic,
  type StackService,
  startTcpFaultProxy,
  type TcpFaultProxy,
  thaw,
  thawAll,
} from '../support/faults.js';
import {
  checkpointsOf,
  createPipeline,
  e2eClients,
  ledgerOf,
  type Pipeline,
  runJob,
  runVerify,
  startJob,
  tableOffsets,
  waitFor,
} from '../support/job.js';
import { produce, startProducer } from '../support/kafka.js';
import { stackEnv, useOwnStack } from '../support/stack.js';

// Its faults strike a stack of its own (freezing the shared Kafka would stall every file running beside it).
useOwnStack('faults');
const clients = await e2eClients();
const repeats = Number(process.env.KBD_FAULT_REPEATS ?? 1);
let proxies: (FaultProxy | TcpFaultProxy)[] = [];
afterEach(async () => {
  thawAll();
  await Promise.all(proxies.map((p) => p.close()));
  proxies = [];
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a service that does not answer cannot hold a run past its budget + 10 s', () => {
  const budget = 10;
  test.each<StackService>([
    'kafka',
    'firestore',
    'pubsub',
    'bigquery',
  ])('%s frozen for the whole run: exit 1 naming it, within budget + 10 s; the next run drains all', async (service) => {
    const pipeline = await createPipeline(clients, 2, {
      BQ_WRITE_MODE: 'storage-write',
      DRAIN_BUDGET_SECONDS: String(budget),
      LEASE_TTL_SECONDS: '5',
    });
    // Good records and bad ones: the run needs every service (dead letters go to Pub/Sub).
    await produce(
      pipeline.topic,
      Array.from({ length: 40 }, (_, i) => ({
        partition: i % 2,
        value: i % 10 === 9 ? `{bad ${i}` : JSON.stringify({ id: `r${i}`, n: i }),
      })),
    );
    await freeze(service);
    const started = Date.now();
    let run: Awaited<ReturnType<typeof runJob>>;
    try {
      run = await runJob(pipeline.env);
    } finally {
      await thaw(service);
    }
    const elapsed = Date.now() - started;
    console.log(`${service} frozen: exit ${run.code} after ${elapsed} ms: ${String(run.summary.error)}`);
    expect(elapsed).toBeLessThan((budget + 10) * 1000);
    expect(run.code).toBe(1);
    expect(run.summary.stopReason).toBe('error');
    expect(String(run.summary.error)).toContain(service);

    // Back: the next run (once the stuck run's leases have expired) drains everything, nothing twice.
    await waitFor(
      'a run to drain everything',
      async () => {
        const next = await runJob(pipeline.env);
        return next.code === 0 && next.summary.stopReason === 'caught_up' && next.summary.lag === 0;
      },
      60_000,
    );
    await check(clients, pipeline, await readTopic(pipeline.topic));
  }, 60_000);
});

interface Scenario {
  readonly name: string;
  /** Starts the fault (1.5 s into a run); returns how to end it. */
  readonly inject: (faults: Faults) => Promise<() => Promise<void>>;
  /** How long the fault lasts. */
  readonly holdMs: number;
}

interface Faults {
  readonly rest: FaultProxy;
  readonly grpc: TcpFaultProxy;
  /** In front of the Firestore and Pub/Sub emulators: connections reset is what clients see of a restart. */
  readonly firestore: TcpFaultProxy;
  readonly pubsub: TcpFaultProxy;
}

/** The service's connections reset and refused (UNAVAILABLE to its clients), as while it restarts. */
const unavailable = (service: 'firestore' | 'pubsub') => async (faults: Faults) => {
  faults[service].setMode('reset');
  return async () => faults[service].setMode('pass');
};

const frozen = (service: StackService) => async () => {
  await freeze(service);
  return () => thaw(service);
};

const bigQueryFailing = async ({ rest, grpc }: Faults) => {
  // Every REST call answers 503 or has its connection reset; every gRPC connection is reset.
  let n = 0;
  rest.setRule(() => (n++ % 3 === 2 ? 'reset' : { status: 503 }));
  grpc.setMode('reset');
  return async () => {
    rest.setRule(() => 'pass');
    grpc.setMode('pass');
  };
};

const scenarios: Scenario[] = [
  {
    name: 'the Kafka broker killed (SIGKILL) and restarted',
    holdMs: 0,
    inject: async () => {
      await killAndRestart('kafka');
      return async () => {};
    },
  },
  { name: 'the Kafka broker frozen', holdMs: 8_000, inject: frozen('kafka') },
  { name: 'Firestore frozen (commits, lease renewals)', holdMs: 8_000, inject: frozen('firestore') },
  { name: 'Pub/Sub frozen (dead letters, alerts)', holdMs: 8_000, inject: frozen('pubsub') },
  {
    name: 'Firestore unavailable (every connection reset, as in a restart)',
    holdMs: 8_000,
    inject: unavailable('firestore'),
  },
  { name: 'Pub/Sub unavailable (every connection reset)', holdMs: 8_000, inject: unavailable('pubsub') },
  {
    name: 'BigQuery answering 503 and resetting connections, longer than a run',
    holdMs: 20_000,
    inject: bigQueryFailing,
  },
  {
    name: 'Firestore frozen and BigQuery failing at once',
    holdMs: 8_000,
    inject: async (faults) => {
      const endBigQuery = await bigQueryFailing(faults);
      const endFirestore = await frozen('firestore')();
      return async () => {
        await endFirestore();
        await endBigQuery();
      };
    },
  },
];

describe('services failing mid-run, under a live producer: nothing lost, nothing twice, the next run recovers', () => {
  const budget = Number(process.env.KBD_FAULT_BUDGET ?? 15);
  test.each(scenarios)('$name', async ({ name, inject, holdMs }) => {
    const stack = stackEnv();
    const rest = await startFaultProxy(stack.BIGQUERY_API_ENDPOINT);
    const grpc = await startTcpFaultProxy(stack.BIGQUERY_STORAGE_ENDPOINT);
    const firestore = await startTcpFaultProxy(stack.FIRESTORE_EMULATOR_HOST);
    const pubsub = await startTcpFaultProxy(stack.PUBSUB_EMULATOR_HOST);
    proxies.push(rest, grpc, firestore, pubsub);
    const pipeline = await createPipeline(clients, 3, {
      BQ_WRITE_MODE: 'storage-write',
      DRAIN_BUDGET_SECONDS: String(budget),
      LEASE_TTL_SECONDS: '5',
      BATCH_MAX_RECORDS: '25',
      STALL_ALERT_SECONDS: '5',
      BIGQUERY_API_ENDPOINT: rest.url,
      BIGQUERY_STORAGE_ENDPOINT: grpc.address,
      FIRESTORE_EMULATOR_HOST: firestore.address,
      PUBSUB_EMULATOR_HOST: pubsub.address,
    });
    const producer = startProducer(pipeline.topic, 3, {
      batch: 2,
      pauseMs: 100,
      malformedEvery: 11,
      throughFaults: true,
    });
    const watcher = watchCheckpoints(clients, pipeline);
    const outcomes: string[] = [];
    // A backlog first, so that the fault strikes while the run is draining, not before it has begun.
    await sleep(2_000);
    for (let i = 0; i < repeats; i++) {
      const job = startJob(pipeline.env);
      const started = Date.now();
      const exitedAt = job.exited.then(() => Date.now());
      await sleep(1_500);
      const end = await inject({ rest, grpc, firestore, pubsub });
      await sleep(holdMs);
      await end();
      const { code } = await job.exited;
      const elapsed = (await exitedAt) - started;
      const summary = job.summary() as { stopReason?: string; error?: string } | undefined;
      outcomes.push(
        `exit ${code} after ${elapsed} ms (${summary?.stopReason}${summary?.error ? `: ${summary.error}` : ''})`,
      );
      // The run ends near its budget whatever the fault.
      expect(elapsed).toBeLessThan((budget + 10) * 1000);
      expect(code).not.toBeNull(); // it exited by itself, no signal
    }
    await sleep(2_000);
    await producer.stop();

    // Recovery by itself: plain runs until one is caught up.
    let runsToRecover = 0;
    await waitFor(
      'runs to catch up',
      async () => {
        runsToRecover++;
        const next = await runJob(pipeline.env);
        return next.code === 0 && next.summary.stopReason === 'caught_up' && next.summary.lag === 0;
      },
      120_000,
    );
    const regressions = await watcher.stop();
    expect(regressions).toEqual([]);
    const truth = await readTopic(pipeline.topic);
    const counts = await check(clients, pipeline, truth);
    console.log(
      `${name}: ${outcomes.join('; ')}; recovered in ${runsToRecover} run(s); ${counts.records} records ` +
        `(${producer.failures()} sends failed), ${counts.rows} rows, ${counts.deadLetters} dead letters, 0 lost, 0 twice`,
    );
  }, 240_000);
});

/** Polls every partition's checkpoint; any that goes back is a regression (G6). */
function watchCheckpoints(clients: GoogleClients, pipeline: Pipeline) {
  const seen = new Map<number, number>();
  const regressions: string[] = [];
  let watching = true;
  const done = (async () => {
    while (watching) {
      // Firestore may be frozen: a poll that fails or hangs is skipped.
      const found = await Promise.race([
        checkpointsOf(clients, pipeline).catch(() => undefined),
        sleep(2_000),
      ]);
      for (const [p, offset] of found instanceof Map ? found : []) {
        if (offset === null) continue;
        if (offset < (seen.get(p) ?? 0)) regressions.push(`partition ${p}: ${seen.get(p)} -> ${offset}`);
        seen.set(p, Math.max(offset, seen.get(p) ?? 0));
      }
      await sleep(200);
    }
  })();
  return {
    async stop() {
      watching = false;
      await done;
      return regressions;
    },
  };
}

/**
 * The crash matrix's checks against what Kafka holds: every offset in exactly one of the table and the
 * error table (valid records as rows, malformed ones as dead letters), nothing twice in either, ledgers
 * chained up to the end, `verify` clean.
 */
async function check(clients: GoogleClients, pipeline: Pipeline, truth: Map<number, Map<number, boolean>>) {
  const table = await tableOffsets(clients, pipeline);
  // No error table: no dead letter was ever written (the drain creates it with the first one).
  const [letterRows] = await clients.bigquery
    .query({
      query: `SELECT _kafka_partition AS p, _kafka_offset AS o FROM \`${pipeline.dataset}.${pipeline.table}_dead_letters\``,
    })
    .catch((error: unknown) => {
      if (/not found/i.test(String(error))) return [[] as { p: number; o: number }[]];
      throw error;
    });
  let rows = 0;
  let deadLetters = 0;
  let records = 0;
  for (const [p, offsets] of truth) {
    records += offsets.size;
    const inTable = table.get(p) ?? [];
    const inLetters = letterRows
      .filter((r: { p: number }) => Number(r.p) === p)
      .map((r: { o: number }) => Number(r.o));
    rows += inTable.length;
    deadLetters += inLetters.length;
    const valid = [...offsets].filter(([, bad]) => !bad).map(([o]) => o);
    const malformed = [...offsets].filter(([, bad]) => bad).map(([o]) => o);
    const missing = valid.filter((o) => !inTable.includes(o));
    if (missing.length > 0) {
      // Where the missing rows are, before the assertions below stop at the first mismatch.
      const ledger = await ledgerOf(clients, pipeline, p);
      console.log(
        `partition ${p}: ${missing.length} valid offsets not in the table (first ${missing.slice(0, 5).join(', ')}); ` +
          `of them in the error table: ${missing.filter((o) => inLetters.includes(o)).length}; ` +
          `ledger: ${JSON.stringify(ledger.map((e) => [e.from, e.to]))}`,
      );
    }
    expect(inTable.length - new Set(inTable).size, `partition ${p}: rows twice`).toBe(0);
    expect(inLetters.length - new Set(inLetters).size, `partition ${p}: dead letters twice`).toBe(0);
    expect(new Set(inTable), `partition ${p}: rows`).toEqual(new Set(valid));
    expect(new Set(inLetters), `partition ${p}: dead letters`).toEqual(new Set(malformed));
    const ledger = await ledgerOf(clients, pipeline, p);
    for (let i = 1; i < ledger.length; i++) expect(ledger[i]!.from).toBe(ledger[i - 1]!.to);
    if (offsets.size > 0) expect(ledger.at(-1)!.to).toBe(Math.max(...offsets.keys()) + 1);
  }
  const verify = await runVerify(pipeline.env);
  expect(verify.code).toBe(0);
  return { records, rows, deadLetters };
}
