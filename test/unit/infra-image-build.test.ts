/**
 * `pulumi up` with no `image`: the program builds the image on Cloud Build from the repository, tagged by
 * the hash of exactly its sources, and pins the job and the status service to its digest.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { repositoryRoot, sourceHash } from '../../infra/image.js';
import { builtDigest, runProgram } from '../support/pulumi-program.js';

let program: Awaited<ReturnType<typeof runProgram>>;
beforeAll(async () => {
  program = await runProgram({
    'kafka-bigquery-drain:image': null,
    'kafka-bigquery-drain:schemaFile': join(repositoryRoot, 'demo', 'orders.schema.json'),
    'kafka-bigquery-drain:writeMode': 'insert-all',
  });
});

describe('the image built by pulumi up', () => {
  test('one Cloud Build of the repository, with the schema file as a build argument, tagged by the hash', () => {
    const build = program.one('command:local:Command');
    const tag = build.inputs.triggers[0] as string;
    expect(tag).toMatch(/^[0-9a-f]{16}$/);
    expect(build.inputs.dir).toBe(repositoryRoot);
    expect(build.inputs.create).toBe(
      'gcloud builds submit . --project=proj --region=europe-west1 --config=infra/cloudbuild.yaml ' +
        `--substitutions=_IMAGE=europe-west1-docker.pkg.dev/proj/orders-drain/kafka-bigquery-drain:${tag},` +
        '_SCHEMA_FILE=demo/orders.schema.json,_ROUTES_DIR=schema --quiet',
    );
  });

  test('the job and the status service run the built image by its digest, not its tag', () => {
    const pinned = `europe-west1-docker.pkg.dev/proj/orders-drain/kafka-bigquery-drain@${builtDigest}`;
    expect(program.one('gcp:cloudrunv2/job:Job').inputs.template.template.containers[0].image).toBe(pinned);
    expect(program.one('gcp:cloudrunv2/service:Service').inputs.template.containers[0].image).toBe(pinned);
  });

  test('building needs Cloud Build; insert-all mode does not need the Storage Write API', () => {
    const services = program.ofType('gcp:projects/service:Service').map((s) => s.inputs.service);
    expect(services).toContain('cloudbuild.googleapis.com');
    expect(services).not.toContain('bigquerystorage.googleapis.com');
  });
});

describe('the hash of the image sources', () => {
  test('a change to the code or the schema changes it; a change anywhere else does not', () => {
    const root = mkdtempSync(join(tmpdir(), 'image-hash-'));
    mkdirSync(join(root, 'functions', 'job'), { recursive: true });
    mkdirSync(join(root, 'schema'));
    writeFileSync(join(root, 'functions', 'job', 'main.ts'), 'export const a = 1;\n');
    writeFileSync(join(root, 'schema', 'orders.json'), '[]');
    writeFileSync(join(root, 'README.md'), '# one\n');
    const sources = ['functions', 'schema/orders.json'];
    const first = sourceHash(sources, root);
    expect(sourceHash(sources, root)).toBe(first);

    writeFileSync(join(root, 'README.md'), '# two\n');
    expect(sourceHash(sources, root)).toBe(first);

    writeFileSync(join(root, 'functions', 'job', 'main.ts'), 'export const a = 2;\n');
    const second = sourceHash(sources, root);
    expect(second).not.toBe(first);

    writeFileSync(join(root, 'schema', 'orders.json'), '[{"name":"id","type":"STRING"}]');
    expect(sourceHash(sources, root)).not.toBe(second);

    writeFileSync(join(root, 'functions', 'job', 'new.ts'), '');
    expect(sourceHash(sources, root)).not.toBe(second);
  });
});
