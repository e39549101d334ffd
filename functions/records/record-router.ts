/**
 * Which route of a group takes each record: the first route of the record's topic whose `when` matches
 * it, or the first without a `when`. A record none takes goes to its topic's first route all the same, to
 * become a `schema` dead letter there (its error table), naming the topic (`refusal`).
 */
import type { RouteWhen } from '../config/route-when.js';
import { matches, type TopicPattern } from '../config/routes.js';
import type { RecordNames } from '../formats/record-names.js';
import type { JsonValue, KafkaRecord } from '../kernel/records.js';

export interface RouterMember {
  readonly topics: readonly TopicPattern[];
  readonly when: RouteWhen | null;
}

export interface RecordRouter {
  /** The records split by route (part i for the group's route i), in their order. */
  split(records: readonly KafkaRecord[], signal?: AbortSignal): Promise<KafkaRecord[][]>;
  /** Why a record no route took is a dead letter; undefined for a record a route took. */
  refusal(record: KafkaRecord): string | undefined;
}

export function createRecordRouter(members: readonly RouterMember[], names?: RecordNames): RecordRouter {
  const unrouted = new WeakSet<KafkaRecord>();
  const byName = members.some((m) => m.when?.kind === 'recordName');
  const routeOf = (record: KafkaRecord): { index: number; taken: boolean } => {
    let first = -1;
    let value: JsonValue | undefined;
    for (const [index, member] of members.entries()) {
      if (!member.topics.some((pattern) => matches(pattern, record.topic))) continue;
      if (first < 0) first = index;
      const when = member.when;
      if (when === null) return { index, taken: true };
      if (when.kind === 'header' && record.headers[when.name] === when.value) return { index, taken: true };
      if (when.kind === 'recordName' && names?.nameOf(record) === when.name) return { index, taken: true };
      if (when.kind === 'field') {
        value ??= jsonOf(record.value);
        if (fieldEquals(value, when.path, when.value)) return { index, taken: true };
      }
    }
    return { index: Math.max(first, 0), taken: false };
  };
  return {
    async split(records, signal) {
      if (byName) await names?.prepare(records, signal);
      const parts: KafkaRecord[][] = members.map(() => []);
      for (const record of records) {
        const { index, taken } = routeOf(record);
        if (!taken) unrouted.add(record);
        parts[index]!.push(record);
      }
      return parts;
    },
    refusal: (record) =>
      unrouted.has(record)
        ? `no route of topic "${record.topic}" takes this record (no "when" matches it, and every route of the topic has one)`
        : undefined,
  };
}

/** The value as JSON (null when it is none: not JSON, a tombstone). */
function jsonOf(value: Buffer | null): JsonValue {
  if (value === null) return null;
  try {
    return JSON.parse(value.toString('utf8')) as JsonValue;
  } catch {
    return null;
  }
}

function fieldEquals(value: JsonValue, path: readonly string[], wanted: string | number | boolean | null) {
  let at: JsonValue | undefined = value;
  for (const key of path) {
    if (at === null || typeof at !== 'object' || Array.isArray(at)) return false;
    at = (at as Record<string, JsonValue>)[key];
  }
  return at !== undefined && at === wanted;
}
