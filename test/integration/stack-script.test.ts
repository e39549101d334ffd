import { execFile, spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it, vi } from 'vitest';

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
