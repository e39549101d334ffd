import type { JsonValue } from '../kernel/records.js';

/** A value the table cannot take, where it is (relative to the value checked) and why. */
export class Invalid extends Error {
  constructor(
    /** Relative to the value being checked ('' is the value itself); prefixed on the way out. */
    readonly path: string,
    message: string,
  ) {
    super(message);
  }

  /** The same failure, seen from the record that holds the value at `segment` (`name` or `name[3]`). */
  under(segment: string): Invalid {
    const path =
      this.path === ''
        ? segment
        : this.path.startsWith('[')
          ? `${segment}${this.path}`
          : `${segment}.${this.path}`;
    return new Invalid(path, this.message);
  }
}

/** What a value is, for a message (`the string "abc"`, `an array`). */
export function kindOf(v: JsonValue): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'an object';
  if (typeof v === 'string') return `the string "${v.length > 30 ? `${v.slice(0, 30)}...` : v}"`;
  return `${typeof v} ${String(v)}`;
}
