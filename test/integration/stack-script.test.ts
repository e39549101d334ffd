import { execFile, spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createTopic, testKafka } from '../support/kafka.js';
import { stackEnv, uniqueName } from '../support/stack.js';

// The stack script run from a checkout without its npm packages: the broker's health check needs kafkajs,
// so without this check `up` waited out its timeout and said only "kafka did not become healthy".
describe('stack.sh up in a checkout without node_modules', () => {
  const checkout = mkdtempSync(join(tmpdir(), 'kbd-no-modules-'));
  afterAll(() => rmSync(checkout, { recursive: true, force: true }));

  it('stops at once, naming the missing packages and the command that installs them', () => {
    cpSync(join(import.meta.dirname, '../../stack'), join(checkout, 'stack'), { recursive: true });
    const run = spawnSync('bash', [join(checkout, 'stack/stack.sh'), 'up'], {
      // Its own state directory and ports nothing listens on: it must stop before it touches any.
      env: { ...process.env, KBD_STACK_DIR: join(checkout, '.stack'), KBD_KAFKA_PORT: '1' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('node_modules/kafkajs is missing');
    expect(run.stderr).toContain("run 'npm ci' first");
  });
});

// The BigQuery emulator keeps its in-memory database in files of the temp folder that it never removes
// (gigabytes after a bench: a full disk stopped Kafka once). `kill` and `down` remove those it holds.
describe('stack.sh kill bigquery', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kbd-emulator-files-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('removes the temp files the emulator held, and no other', async () => {
    const temp = join(dir, 'tmp');
    const stackDir = join(dir, '.stack');
    mkdirSync(temp);
    mkdirSync(join(stackDir, 'pids'), { recursive: true });
    const held = join(temp, '3428966500');
    const other = join(temp, '420818531');
    writeFileSync(other, 'an earlier emulator: not this one');
    // A stand-in for the emulator, in a process group of its own as the stack starts it: it holds `held`.
    const standIn = spawn(
      process.execPath,
      ['-e', `require('fs').openSync(${JSON.stringify(held)}, 'w'); setInterval(() => {}, 1000)`],
      { detached: true, stdio: 'ignore' },
    );
    await vi.waitFor(() => expect(existsSync(held)).toBe(true), { timeout: 10_000 });
    writeFileSync(join(stackDir, 'pids', 'bigquery.pid'), String(standIn.pid));

    // Not spawnSync: this process must reap the stand-in for the script to see it gone.
    const run = await promisify(execFile)(
      'bash',
      [join(import.meta.dirname, '../../stack/stack.sh'), 'kill', 'bigquery'],
      { env: { ...process.env, KBD_STACK_DIR: stackDir, TMPDIR: temp }, timeout: 60_000 },
    );
    expect(run.stderr).toBe('');
    expect(existsSync(held)).toBe(false);
    expect(existsSync(other)).toBe(true);
    expect(existsSync(join(stackDir, 'pids', 'bigquery.pid'))).toBe(false);
  });
});

// The suite deletes its own topics when it starts and ends (global-setup.ts): a broker reused day after day
// reached 15,065 partition folders and took 2.5 minutes to restart. Only names behind the suite's prefix go.
describe('stack.sh prune', () => {
  it("deletes the suite's topics (kbdtest_…) and never a user's", async () => {
    const suiteTopic = uniqueName('prune');
    const userTopics = [`orders-${suiteTopic}`, `kbdtesting-${suiteTopic}`];
    expect(suiteTopic.startsWith('kbdtest_')).toBe(true);
    for (const topic of [suiteTopic, ...userTopics]) await createTopic(topic, 2);
    const admin = testKafka().admin();
    await admin.connect();
    try {
      const run = await promisify(execFile)(
        'bash',
        [join(import.meta.dirname, '../../stack/stack.sh'), 'prune'],
        {
          timeout: 120_000,
        },
      );
      expect(run.stderr).toMatch(/deleted [1-9]\d* topics of the test suite/);
      await vi.waitFor(async () => expect(await admin.listTopics()).not.toContain(suiteTopic), {
        timeout: 30_000,
        interval: 200,
      });
      const left = await admin.listTopics();
      for (const topic of userTopics) expect(left).toContain(topic);
      expect(left.filter((t) => /^kbdtest[-_.]/.test(t))).toEqual([]);
    } finally {
      await admin.deleteTopics({ topics: userTopics }).catch(() => {});
      await admin.disconnect();
    }
  });
});

// End-to-end files run side by side, each on a BigQuery emulator of its own: lane N of the stack.
describe('stack.sh lane N', () => {
  const script = join(import.meta.dirname, '../../stack/stack.sh');
  const lane = '41';
  afterAll(() => spawnSync('bash', [script, 'kill', `bigquery-lane${lane}`]));

  it('starts a fresh emulator on its own ports each time', async () => {
    const start = () => promisify(execFile)('bash', [script, 'lane', lane], { timeout: 120_000 });
    const first = await start();
    const endpoint = /BIGQUERY_API_ENDPOINT=(\S+)/.exec(first.stdout)?.[1];
    expect(endpoint).toBe('http://127.0.0.1:19191');
    expect(first.stdout).toContain('BIGQUERY_STORAGE_ENDPOINT=127.0.0.1:19201');
    const datasets = `${endpoint}/bigquery/v2/projects/${stackEnv().GOOGLE_CLOUD_PROJECT}/datasets`;
    const made = await fetch(datasets, {
      method: 'POST',
      body: JSON.stringify({ datasetReference: { datasetId: 'lane_data' } }),
    });
    expect(made.status).toBe(200);
    expect(JSON.stringify(await (await fetch(datasets)).json())).toContain('lane_data');
    // Started again: the data is gone (a file's timing does not depend on the files before it).
    await start();
    expect(JSON.stringify(await (await fetch(datasets)).json())).not.toContain('lane_data');
    // The stack's own emulator is another one.
    expect(stackEnv().BIGQUERY_API_ENDPOINT).not.toBe(endpoint);
    const refused = spawnSync('bash', [script, 'lane', 'x'], { encoding: 'utf8' });
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain("a lane is a number from 1 to 99, not 'x'");
  });
});
