import { ConfigError } from '../kernel/errors.js';
import { type SettingName, settingDefault } from './settings.js';

/** The environment as the parser reads it (a parameter, so that the parser is tested table-driven). */
export type Env = Readonly<Record<string, string | undefined>>;
export type Reader = ReturnType<typeof reader>;

/**
 * Reads variables with their checks; every error names the variable. Only the settings of settings.ts can
 * be read, and a default left out is that table's.
 */
export function reader(env: Env) {
  function optional(name: SettingName): string | null {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? null : value;
  }
  function required(name: SettingName): string {
    const value = optional(name);
    if (value === null) throw new ConfigError(name, 'is required');
    return value;
  }
  function oneOf<T extends string>(name: SettingName, allowed: readonly T[]): T;
  function oneOf<T extends string, D extends T | null>(
    name: SettingName,
    allowed: readonly T[],
    fallback: D,
  ): T | D;
  function oneOf<T extends string>(
    name: SettingName,
    allowed: readonly T[],
    fallback: T | null = settingDefault(name, 'string') as T,
  ): T | null {
    const raw = optional(name);
    if (raw === null) return fallback;
    if (!(allowed as readonly string[]).includes(raw)) {
      throw new ConfigError(name, `"${raw}" is not one of ${allowed.join(', ')}`);
    }
    return raw as T;
  }
  return {
    optional,
    required,
    oneOf,
    /** The value, or the setting's default. */
    text(name: SettingName): string {
      return optional(name) ?? settingDefault(name, 'string');
    },
    matching<O extends boolean = false>(
      name: SettingName,
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
    list(name: SettingName, pattern: RegExp, what: string): string[] {
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
    integer(name: SettingName, min: number, max: number, fallback = settingDefault(name, 'number')): number {
      const raw = optional(name);
      if (raw === null) return fallback;
      if (!/^-?\d+$/.test(raw)) throw new ConfigError(name, `"${raw}" is not a whole number`);
      const value = Number(raw);
      if (value < min || value > max)
        throw new ConfigError(name, `(${value}) must be between ${min} and ${max}`);
      return value;
    },
    boolean(name: SettingName, fallback = settingDefault(name, 'boolean')): boolean {
      const raw = optional(name)?.toLowerCase() ?? null;
      if (raw === null) return fallback;
      if (['true', '1', 'yes'].includes(raw)) return true;
      if (['false', '0', 'no'].includes(raw)) return false;
      throw new ConfigError(name, `"${raw}" is not true or false`);
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
