import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

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
