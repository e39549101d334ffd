import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import * as command from '@pulumi/command';
import * as gcp from '@pulumi/gcp';
import * as pulumi from '@pulumi/pulumi';
import type { InfraConfig } from './config.js';

/** The repository: what the Dockerfile copies is read from here. */
export const repositoryRoot = resolve(import.meta.dirname, '..');
export const imageName = 'kafka-bigquery-drain';

/** The files that go into the image, besides the schema file or the routes folder (the Dockerfile's COPYs). */
const codeSources = [
  'Dockerfile',
  'infra/cloudbuild.yaml',
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'tsconfig.build.json',
  'functions',
  'scripts/bundle.mjs',
  'bin',
];

/** Where the schema file and the routes folder are, as paths inside the repository (build arguments). */
export function buildArguments(config: InfraConfig, root = repositoryRoot) {
  const inside = (path: string, what: string) => {
    const rel = relative(root, resolve(path));
    if (rel.startsWith('..') || rel === '')
      throw new Error(
        `${what} (${path}) must be inside the repository to be built into the image, or set image`,
      );
    return rel;
  };
  const schemaFile = config.routesFile === undefined ? config.routes[0]!.schemaFile : null;
  return {
    schemaFile: schemaFile === null ? 'schema/target.schema.json' : inside(schemaFile, 'schemaFile'),
    routesDir: config.routesFile === undefined ? 'schema' : inside(config.routesFile.dir, 'routesFile'),
  };
}

/**
 * A hash of exactly what goes into the image: the code, the build, the schema file and the routes folder.
 * A change to any of them makes a new tag (and a build); anything else (docs, tests, infra) does not.
 */
export function sourceHash(paths: readonly string[], root = repositoryRoot): string {
  const hash = createHash('sha256');
  const files = [...new Set(paths.flatMap((p) => filesUnder(join(root, p))))].sort();
  for (const file of files) {
    hash.update(relative(root, file));
    hash.update('\0');
    hash.update(readFileSync(file));
    hash.update('\0');
  }
  return hash.digest('hex').slice(0, 16);
}

/** Every file below `path` (or `path` itself when it is a file). */
export function filesUnder(path: string): string[] {
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path, { withFileTypes: true }).flatMap((e) => filesUnder(join(path, e.name)));
}

/**
 * The image the job and the status service run: built on Cloud Build from the repository and tagged by
 * the hash of its sources (an unchanged tree builds nothing), then pinned by its digest, so that what
 * runs changes only when its sources do. `image` in the config skips the build and runs that image as is.
 */
export class PipelineImage extends pulumi.ComponentResource {
  /** `…/kafka-bigquery-drain@sha256:…`, or the configured image. */
  readonly ref: pulumi.Output<string>;
  /** The tag built: the hash of the image's sources (none when `image` is set). */
  readonly tag: string | undefined;

  constructor(
    name: string,
    config: InfraConfig,
    repository: { repositoryId: pulumi.Output<string>; url: pulumi.Output<string> },
    opts?: pulumi.ComponentResourceOptions,
  ) {
    super('kafka-bigquery-drain:index:PipelineImage', name, {}, opts);
    if (config.image !== undefined) {
      this.ref = pulumi.output(config.image);
      this.tag = undefined;
      this.registerOutputs({});
      return;
    }
    const args = buildArguments(config);
    this.tag = sourceHash([...codeSources, args.schemaFile, args.routesDir]);
    const tagged = pulumi.interpolate`${repository.url}/${imageName}:${this.tag}`;
    const build = new command.local.Command(
      `${name}-build`,
      {
        dir: repositoryRoot,
        create: pulumi.interpolate`gcloud builds submit . --project=${config.project} --region=${config.region} --config=infra/cloudbuild.yaml --substitutions=_IMAGE=${tagged},_SCHEMA_FILE=${args.schemaFile},_ROUTES_DIR=${args.routesDir} --quiet`,
        triggers: [this.tag],
      },
      { parent: this },
    );
    const built = gcp.artifactregistry.getDockerImageOutput(
      {
        project: config.project,
        location: config.region,
        repositoryId: repository.repositoryId,
        imageName: `${imageName}:${this.tag}`,
      },
      { parent: this, dependsOn: [build] },
    );
    this.ref = built.selfLink;
    this.registerOutputs({ ref: this.ref });
  }
}
