/**
 * `pulumi up` with no `image` and a routes file: the routes folder is built into the image (a build
 * argument), and the job reads ROUTES_FILE there; nothing is mounted. One program a file (Pulumi's mocks).
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { repositoryRoot } from '../../infra/image.js';
import { runProgram } from '../support/pulumi-program.js';

test('the routes folder goes into the image; ROUTES_FILE names it there', async () => {
  // Inside the repository (the build's context): under .stack/, which git ignores.
  mkdirSync(join(repositoryRoot, '.stack'), { recursive: true });
  const folder = mkdtempSync(join(repositoryRoot, '.stack', 'routes-build-'));
  writeFileSync(
    join(folder, 'events.schema.json'),
    JSON.stringify([{ name: 'id', type: 'STRING', mode: 'REQUIRED' }]),
  );
  writeFileSync(
    join(folder, 'routes.json'),
    JSON.stringify([{ topics: ['a'], table: 'routed.a', schemaFile: 'events.schema.json' }]),
  );
  const program = await runProgram({
    'kafka-bigquery-drain:image': null,
    'kafka-bigquery-drain:kafkaTopics': null,
    'kafka-bigquery-drain:routesFile': join(folder, 'routes.json'),
  });
  const build = program.one('command:local:Command');
  expect(build.inputs.create).toContain(`_ROUTES_DIR=${folder.slice(repositoryRoot.length + 1)}`);
  const task = program.one('gcp:cloudrunv2/job:Job').inputs.template.template;
  const env = Object.fromEntries(
    (task.containers[0].envs as { name: string; value?: string }[]).map((e) => [e.name, e.value]),
  );
  expect(env.ROUTES_FILE).toBe('/app/routes/routes.json');
  expect((task.volumes ?? []).map((v: { name: string }) => v.name)).not.toContain('routes');
});
