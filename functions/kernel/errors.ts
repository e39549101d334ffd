/**
 * Every error the drain raises says whether trying again can help. Adapters map their service's codes
 * to these through one table each; programming errors (TypeError, RangeError) are never retriable.
 */
export class DrainError extends Error {
  readonly retriable: boolean;
  readonly code: string | undefined;

  constructor(message: string, options: { retriable: boolean; code?: string | undefined; cause?: unknown }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.retriable = options.retriable;
    this.code = options.code;
  }
}

/** A setting is missing or wrong. The run stops at start; exit code 2. */
export class ConfigError extends DrainError {
  readonly variable: string;

  constructor(variable: string, message: string) {
    super(`${variable}: ${message}`, { retriable: false, code: 'config' });
    this.variable = variable;
  }
}

/** This run no longer holds the partition's lease (it expired or another run took it over). */
export class FencedError extends DrainError {
  constructor(message: string) {
    super(message, { retriable: false, code: 'fenced' });
  }
}

/** Wraps an unknown throw once, where it is caught. */
export function asError(thrown: unknown): Error {
  return thrown instanceof Error ? thrown : new Error(String(thrown));
}

export function isRetriable(error: unknown): boolean {
  return error instanceof DrainError && error.retriable;
}

/**
 * The partition cannot go on in this run through no fault of its records (the schema registry does not
 * answer; a schema version the table must first be evolved for): it waits, said in its summary line, and
 * the run goes on with the others. Nothing of it is dead-lettered and its checkpoint stays.
 */
export class PartitionWaitsError extends DrainError {
  /** The records are held back on purpose (a quota spent): the partition's `backlog` alert opens. */
  readonly heldBack: boolean;

  constructor(message: string, cause?: unknown, options: { heldBack?: boolean } = {}) {
    super(message, { retriable: true, code: 'waits', cause });
    this.heldBack = options.heldBack ?? false;
  }
}
