import { ConfigError } from '../kernel/errors.js';

/** The environment as the parser reads it (a parameter, so that the parser is tested table-driven). */
export type Env = Readonly<Record<string, string | undefined>>;
export type Reader = ReturnType<typeof reader>;

/** Reads variables with their checks; every error names the variable. */
export function reader(env: Env) {
  function optional(name: string): string | null {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? null : value;
  }
  function required(name: string): string {
    const value = optional(name);
    if (value === null) throw new ConfigError(name, 'is required');
    return value;
  }
  return {
    optional,
    required,
    matching<O extends boolean = false>(
      name: string,
      pattern: RegExp,
      what: string,
      isOptional?: O,
    ): O extends true ? string | null : string {
      type Result = O extends true ? string | null : string;
      const value = isOptional ? optional(name) : required(name);
      if (value === null) return null as Result;
      if (!pattern.test(value)) throw new ConfigError(name, `"${value}" is not valid (${what})`);
      return value as Result;
    },
    list(name: string, pattern: RegExp, what: string): string[] {
      const items = required(name)
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '');
      if (items.length === 0) throw new ConfigError(name, 'is required');
      for (const item of items) {
        if (!pattern.test(item)) throw new ConfigError(name, `"${item}" is not valid (${what})`);
      }
      if (new Set(items).size !== items.length) throw new ConfigError(name, 'lists an entry twice');
      return items;
    },
    integer(name: string, fallback: number, min: number, max: number): number {
      const raw = optional(name);
      if (raw === null) return fallback;
      if (!/^-?\d+$/.test(raw)) throw new ConfigError(name, `"${raw}" is not a whole number`);
      const value = Number(raw);
      if (value < min || value > max)
        throw new ConfigError(name, `(${value}) must be between ${min} and ${max}`);
      return value;
    },
    boolean(name: string, fallback: boolean): boolean {
      const raw = optional(name)?.toLowerCase() ?? null;
      if (raw === null) return fallback;
      if (['true', '1', 'yes'].includes(raw)) return true;
      if (['false', '0', 'no'].includes(raw)) return false;
      throw new ConfigError(name, `"${raw}" is not true or false`);
    },
    oneOf<T extends string, D extends T | null>(name: string, allowed: readonly T[], fallback: D): T | D {
      const raw = optional(name);
      if (raw === null) return fallback;
      if (!(allowed as readonly string[]).includes(raw)) {
        throw new ConfigError(name, `"${raw}" is not one of ${allowed.join(', ')}`);
      }
      return raw as T;
    },
  };
}

export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !(value instanceof RegExp)) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
