/**
 * JSON lines in Cloud Logging's shape: `severity`, `message`, and flat fields. Children add scope
 * (`{pipeline, topic, partition}`) to every line they write. Record payloads never go through here.
 */
export type Severity = 'DEBUG' | 'INFO' | 'NOTICE' | 'WARNING' | 'ERROR' | 'CRITICAL';
export type LogLevel = 'debug' | 'info' | 'warning' | 'error';
/** LOG_LEVEL's accepted spellings: ours (Cloud Logging's), and `warn` as kafkajs, pino and winston spell it. */
export const logLevelNames: Readonly<Record<string, LogLevel>> = {
  debug: 'debug',
  info: 'info',
  warning: 'warning',
  warn: 'warning',
  error: 'error',
};

const rank: Record<Severity, number> = { DEBUG: 0, INFO: 1, NOTICE: 1, WARNING: 2, ERROR: 3, CRITICAL: 4 };
const levelRank: Record<LogLevel, number> = { debug: 0, info: 1, warning: 2, error: 3 };

export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  notice(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  /**
   * Written whatever the level: the run summary, which log-based metrics, the dashboard and operators'
   * scripts read, so it must not vanish at LOG_LEVEL=warning.
   */
  always(severity: Severity, message: string, fields?: LogFields): void;
  child(scope: LogFields): Logger;
}

export function createLogger(options: {
  level?: LogLevel;
  write?: (line: string) => void;
  scope?: LogFields;
  now?: () => Date;
}): Logger {
  const min = levelRank[options.level ?? 'info'];
  const write = options.write ?? ((line: string) => process.stdout.write(line + '\n'));
  const now = options.now ?? (() => new Date());
  const scope = options.scope ?? {};

  function log(severity: Severity, message: string, fields?: LogFields, always = false): void {
    if (!always && rank[severity] < min) return;
    const entry = { severity, message, time: now().toISOString(), ...scope, ...fields };
    write(JSON.stringify(entry, errorsAsObjects));
  }

  return {
    debug: (m, f) => log('DEBUG', m, f),
    info: (m, f) => log('INFO', m, f),
    notice: (m, f) => log('NOTICE', m, f),
    warn: (m, f) => log('WARNING', m, f),
    error: (m, f) => log('ERROR', m, f),
    always: (severity, m, f) => log(severity, m, f, true),
    child: (more) => createLogger({ ...options, scope: { ...scope, ...more } }),
  };
}

function errorsAsObjects(_key: string, value: unknown): unknown {
  if (value instanceof Error) {
    const retriable = (value as { retriable?: unknown }).retriable;
    return { name: value.name, message: value.message, ...(retriable === undefined ? {} : { retriable }) };
  }
  if (typeof value === 'bigint') return value.toString();
  return value;
}

/** A logger that keeps its lines, for tests. */
export function createMemoryLogger(): Logger & { lines: LogFields[] } {
  const lines: LogFields[] = [];
  const logger = createLogger({ level: 'debug', write: (line) => lines.push(JSON.parse(line) as LogFields) });
  return Object.assign(logger, { lines });
}
