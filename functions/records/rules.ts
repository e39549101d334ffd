import type { JsonValue, KafkaRecord } from '../kernel/records.js';
import { importUserModule } from './user-module.js';

/**
 * Business rules: `RULES_MODULE` names a JS/TS module exporting `validate(record, context)`. It returns
 * ok (`true`, `undefined`, `{ ok: true }`) or a reason (a string, `false`, `{ ok: false, reason }`), and may
 * be async. A rule that throws rejects the record with the error as its reason: a `rule` dead letter, never
 * a crash of the run.
 */
export interface RuleContext {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly timestamp: string;
  readonly key: string | null;
  readonly headers: Readonly<Record<string, string>>;
}

export interface Rules {
  /** The reason the record breaks a rule, or undefined when it passes. */
  check(value: Record<string, JsonValue>, record: KafkaRecord): Promise<string | undefined>;
}

type RuleResult = boolean | string | undefined | null | { ok: boolean; reason?: string };
type Validate = (record: Record<string, JsonValue>, context: RuleContext) => RuleResult | Promise<RuleResult>;

export function createRules(validate: Validate): Rules {
  return {
    async check(value, record) {
      const context: RuleContext = {
        topic: record.topic,
        partition: record.partition,
        offset: record.offset,
        timestamp: new Date(record.timestamp).toISOString(),
        key: record.key === null ? null : record.key.toString('utf8'),
        headers: record.headers,
      };
      let result: RuleResult;
      try {
        // A structured clone: a rule cannot change the row it judges.
        result = await validate(structuredClone(value), context);
      } catch (error) {
        return `rule threw: ${error instanceof Error ? error.message : String(error)}`;
      }
      if (result === true || result === undefined || result === null) return undefined;
      if (result === false) return 'rejected by a rule';
      if (typeof result === 'string') return result;
      if (typeof result === 'object' && typeof result.ok === 'boolean') {
        return result.ok ? undefined : (result.reason ?? 'rejected by a rule');
      }
      return `rule returned ${JSON.stringify(result)}, not ok or a reason`;
    },
  };
}

/** Loads `RULES_MODULE` (called by the entry points only). */
export async function loadRules(specifier: string): Promise<Rules> {
  const module = (await importUserModule(specifier)) as {
    validate?: unknown;
    default?: { validate?: unknown };
  };
  const validate = module.validate ?? module.default?.validate;
  if (typeof validate !== 'function')
    throw new Error(`RULES_MODULE ${specifier} exports no validate(record, context) function`);
  return createRules(validate as Validate);
}
