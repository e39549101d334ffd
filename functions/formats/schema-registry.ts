import { DrainError } from '../kernel/errors.js';

/**
 * A schema registry speaking Confluent's REST API (Confluent, Karapace, Apicurio's compatibility API,
 * Google's Managed Kafka schema registry). Only what a reader needs: a schema by id, a subject's version.
 */
export interface SchemaRegistry {
  /** The schema a record names by id: fetched once, then cached for the run. */
  schemaById(id: number): Promise<RegisteredSchema>;
  /** A subject's version (`latest` or a number), as a table's columns or a reference's text. */
  subjectVersion(
    subject: string,
    version: number | 'latest',
  ): Promise<RegisteredSchema & { version: number }>;
}

export type SchemaType = 'AVRO' | 'PROTOBUF' | 'JSON';

export interface SchemaReference {
  readonly name: string;
  readonly subject: string;
  readonly version: number;
}

export interface RegisteredSchema {
  readonly id: number;
  readonly schemaType: SchemaType;
  readonly schema: string;
  readonly references: readonly SchemaReference[];
}

/** The registry does not know the id or subject (404): the record's fault, not the registry's. */
export class SchemaNotFoundError extends DrainError {
  constructor(message: string) {
    super(message, { retriable: false, code: 'schema_not_found' });
  }
}

export interface RegistryOptions {
  readonly url: string;
  /** Basic auth (Confluent Cloud keys, Karapace, ...). */
  readonly username?: string | undefined;
  readonly password?: string | undefined;
  /** A bearer token per request (Google's registry: the job's own credentials). */
  readonly bearer?: (() => Promise<string>) | undefined;
  readonly timeoutMs?: number;
  readonly fetch?: typeof fetch;
}

export function createSchemaRegistry(options: RegistryOptions): SchemaRegistry {
  const base = options.url.replace(/\/+$/, '');
  const doFetch = options.fetch ?? fetch;
  const basic =
    options.username === undefined
      ? undefined
      : `Basic ${Buffer.from(`${options.username}:${options.password ?? ''}`).toString('base64')}`;
  const byId = new Map<number, Promise<RegisteredSchema>>();
  const byVersion = new Map<string, Promise<RegisteredSchema & { version: number }>>();

  async function get(path: string, what: string): Promise<Record<string, unknown>> {
    const headers: Record<string, string> = {
      accept: 'application/vnd.schemaregistry.v1+json, application/json',
    };
    if (basic !== undefined) headers.authorization = basic;
    else if (options.bearer !== undefined) headers.authorization = `Bearer ${await options.bearer()}`;
    let response: Response;
    try {
      response = await doFetch(`${base}${path}`, {
        headers,
        signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
      });
    } catch (error) {
      throw new DrainError(`the schema registry did not answer for ${what}: ${causeOf(error)}`, {
        retriable: true,
        code: 'registry_unavailable',
        cause: error,
      });
    }
    const text = await response.text().catch(() => '');
    if (response.ok) {
      try {
        return JSON.parse(text) as Record<string, unknown>;
      } catch {
        throw new DrainError(`the schema registry answered ${what} with no JSON`, {
          retriable: true,
          code: 'registry_unavailable',
        });
      }
    }
    const detail = `${response.status} ${text.slice(0, 200)}`.trim();
    if (response.status === 404)
      throw new SchemaNotFoundError(`the schema registry has no ${what} (${detail})`);
    // Overload, timeouts and server faults pass; a refusal of our credentials or request does not.
    const retriable = response.status >= 500 || response.status === 429 || response.status === 408;
    throw new DrainError(`the schema registry refused ${what}: ${detail}`, {
      retriable,
      code: retriable ? 'registry_unavailable' : 'registry_refused',
    });
  }

  return {
    schemaById(id) {
      let known = byId.get(id);
      if (known === undefined) {
        known = get(`/schemas/ids/${id}`, `schema id ${id}`).then((body) => registered(id, body));
        byId.set(id, known);
        // A registry fault is forgotten, so that the next attempt asks again; a 404 is too (it may be a
        // registry restored from backup a moment later), at the cost of one request per record batch.
        known.catch(() => byId.delete(id));
      }
      return known;
    },
    subjectVersion(subject, version) {
      const key = `${subject}\u0000${version}`;
      let known = byVersion.get(key);
      if (known === undefined) {
        known = get(
          `/subjects/${encodeURIComponent(subject)}/versions/${version}`,
          `version ${version} of subject ${subject}`,
        ).then((body) => ({ ...registered(Number(body.id), body), version: Number(body.version) }));
        byVersion.set(key, known);
        known.catch(() => byVersion.delete(key));
      }
      return known;
    },
  };
}

function registered(id: number, body: Record<string, unknown>): RegisteredSchema {
  const type = body.schemaType ?? 'AVRO';
  if (type !== 'AVRO' && type !== 'PROTOBUF' && type !== 'JSON')
    throw new DrainError(`schema id ${id} has the type ${String(type)}, which this drain does not read`, {
      retriable: false,
    });
  if (typeof body.schema !== 'string')
    throw new DrainError(`the schema registry answered schema id ${id} without its text`, {
      retriable: true,
    });
  const references = Array.isArray(body.references)
    ? body.references.map((r: { name: string; subject: string; version: number }) => ({
        name: String(r.name),
        subject: String(r.subject),
        version: Number(r.version),
      }))
    : [];
  return { id, schemaType: type, schema: body.schema, references };
}

function causeOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? error.message;
}
