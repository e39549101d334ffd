/**
 * Secret-valued settings may name a Secret Manager secret version instead of holding the value
 * (`KAFKA_SASL_PASSWORD=projects/acme/secrets/orders-kafka-sasl-password/versions/latest`): an operator's
 * shell gets a deployed pipeline's configuration without a secret on disk or in shell history. Each
 * reference is read once, at start, through the official client, and the value replaces it in memory
 * only; the PEM settings (`*_FILE`) then hold the PEM text itself (kafka-client.ts takes either).
 */
import { reader } from '../config/reader.js';
import { secretManagerEndpoint } from '../config/secret-manager-endpoint.js';
import { ConfigError, DrainError } from '../kernel/errors.js';

type Env = Readonly<Record<string, string | undefined>>;

/** The settings that may hold a reference: every one whose value is a credential. */
export const secretSettings = [
  'KAFKA_SASL_USERNAME',
  'KAFKA_SASL_PASSWORD',
  'SCHEMA_REGISTRY_USERNAME',
  'SCHEMA_REGISTRY_PASSWORD',
  'KAFKA_SSL_CA_FILE',
  'KAFKA_SSL_CERT_FILE',
  'KAFKA_SSL_KEY_FILE',
] as const;

/** `projects/{project id or number}/secrets/{secret id}/versions/{latest or a number}`. */
const referenceShape =
  /^projects\/[a-z0-9][a-z0-9-]{0,62}\/secrets\/[A-Za-z0-9_-]{1,255}\/versions\/(latest|[1-9]\d*)$/;

/** Reads one secret version's payload as text. */
export type SecretAccess = (reference: string) => Promise<string>;

/**
 * The references among the secret-valued settings, checked for shape: a value that starts like one
 * (`projects/`) and is not one is a ConfigError naming its variable, before any call is made.
 */
export function secretReferences(env: Env): { variable: string; reference: string }[] {
  const found: { variable: string; reference: string }[] = [];
  for (const variable of secretSettings) {
    const value = env[variable]?.trim();
    if (value === undefined || !value.startsWith('projects/')) continue;
    if (!referenceShape.test(value)) {
      throw new ConfigError(
        variable,
        `"${value}" is not a Secret Manager reference (projects/PROJECT/secrets/SECRET/versions/latest or a version number)`,
      );
    }
    found.push({ variable, reference: value });
  }
  return found;
}

/** gRPC codes that no retry mends: the reference or the account's role is wrong. */
const settingIsWrong: Readonly<Record<number, string>> = {
  3: 'invalid',
  5: 'not found',
  7: 'permission denied (the account needs roles/secretmanager.secretAccessor on the secret)',
  9: 'not usable (a disabled or destroyed version)',
};

/**
 * The environment with every reference replaced by its secret's value; the same object when there is
 * none (no client is made). A wrong reference is a ConfigError naming its variable (exit 2); a Secret
 * Manager that does not answer is a retriable error (exit 1).
 */
export async function resolveSecretReferences(env: Env, access?: SecretAccess): Promise<Env> {
  const references = secretReferences(env);
  if (references.length === 0) return env;
  const read = access ?? (await secretManagerAccess(env));
  const resolved: Record<string, string | undefined> = { ...env };
  await Promise.all(
    references.map(async ({ variable, reference }) => {
      try {
        resolved[variable] = await read(reference);
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        const wrong = typeof code === 'number' ? settingIsWrong[code] : undefined;
        if (wrong !== undefined) throw new ConfigError(variable, `"${reference}": ${wrong}`);
        throw new DrainError(
          `${variable}: Secret Manager did not give "${reference}": ${(error as Error).message}`,
          {
            retriable: true,
            code: 'secret-manager',
            cause: error,
          },
        );
      }
    }),
  );
  return resolved;
}

/**
 * Secret Manager through its official client: Google Cloud, or the plaintext gRPC endpoint that
 * SECRET_MANAGER_ENDPOINT names (tests: no emulator exists, so they serve the client's own protocol).
 */
async function secretManagerAccess(env: Env): Promise<SecretAccess> {
  const { SecretManagerServiceClient } = await import('@google-cloud/secret-manager');
  const endpoint = secretManagerEndpoint(reader(env)) ?? undefined;
  const grpc = endpoint === undefined ? undefined : await import('@grpc/grpc-js');
  const client = new SecretManagerServiceClient(
    endpoint === undefined || grpc === undefined
      ? {}
      : {
          servicePath: endpoint.slice(0, endpoint.lastIndexOf(':')),
          port: Number(endpoint.slice(endpoint.lastIndexOf(':') + 1)),
          sslCreds: grpc.credentials.createInsecure(),
        },
  );
  return async (reference) => {
    const [version] = await client.accessSecretVersion({ name: reference });
    const data = version.payload?.data;
    if (data === null || data === undefined)
      throw Object.assign(new Error('the version has no payload'), { code: 9 });
    return typeof data === 'string' ? data : Buffer.from(data).toString('utf8');
  };
}
