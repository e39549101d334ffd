/**
 * Where the program's settings come from: the stack's config (`pulumi config set`, the one-pipeline
 * program) or a component's arguments (`new DrainPipeline(name, args)`). Both are read through this one
 * shape, so that a key means the same either way and is checked the same way (config.ts).
 */
import * as pulumi from '@pulumi/pulumi';

export interface ConfigReader {
  get(key: string): string | undefined;
  getBoolean(key: string): boolean | undefined;
  getNumber(key: string): number | undefined;
  getSecret(key: string): pulumi.Output<string> | undefined;
  getObject<T>(key: string): T | undefined;
  require(key: string): string;
  requireSecret(key: string): pulumi.Output<string>;
  requireObject<T>(key: string): T;
}

/** The stack's config: the `gcp` namespace and the project's own. */
export function stackConfig(): { config: ConfigReader; gcp: ConfigReader } {
  return { config: new pulumi.Config(), gcp: new pulumi.Config('gcp') };
}

/** A component's arguments as config: the same keys, their values given as they are. */
export function argumentsConfig(
  args: Readonly<Record<string, unknown>>,
  what: string,
): { config: ConfigReader; gcp: ConfigReader } {
  return { config: reader(args, what), gcp: reader({ project: args.project, region: args.region }, what) };
}

function reader(args: Readonly<Record<string, unknown>>, what: string): ConfigReader {
  const value = (key: string): unknown => (args[key] === null ? undefined : args[key]);
  const missing = (key: string) => new Error(`${what}: argument ${key} is required`);
  const text = (key: string): string | undefined => {
    const v = value(key);
    if (v === undefined) return undefined;
    if (typeof v === 'string') return v;
    if (typeof v === 'number' || typeof v === 'boolean') return String(v);
    throw new Error(`${what}: argument ${key} must be a string, not ${typeof v}`);
  };
  const config: ConfigReader = {
    get: text,
    getBoolean(key) {
      const v = value(key);
      if (v === undefined || typeof v === 'boolean') return v;
      throw new Error(`${what}: argument ${key} must be true or false`);
    },
    getNumber(key) {
      const v = value(key);
      if (v === undefined || typeof v === 'number') return v;
      throw new Error(`${what}: argument ${key} must be a number`);
    },
    getSecret(key) {
      const v = value(key);
      return v === undefined ? undefined : pulumi.secret(pulumi.output(v as pulumi.Input<string>));
    },
    getObject: <T>(key: string) => value(key) as T | undefined,
    require(key) {
      const v = text(key);
      if (v === undefined) throw missing(key);
      return v;
    },
    requireSecret(key) {
      const v = config.getSecret(key);
      if (v === undefined) throw missing(key);
      return v;
    },
    requireObject<T>(key: string) {
      const v = value(key);
      if (v === undefined) throw missing(key);
      return v as T;
    },
  };
  return config;
}
