import { ConfigError } from '../kernel/errors.js';
import type { Watermarks } from '../kernel/records.js';

/** Where a partition with no checkpoint yet starts. Never used for one that has a checkpoint. */
export type StartPosition =
  | { readonly kind: 'earliest' }
  | { readonly kind: 'latest' }
  | { readonly kind: 'timestamp'; readonly timestamp: number }
  | { readonly kind: 'offsets'; readonly offsets: ReadonlyMap<string, number> };

/** `earliest` | `latest` | `timestamp:<ISO-8601>` | `offsets:<topic>:<partition>=<offset>,...` */
export function parseStartPosition(raw: string | null, variable = 'START_POSITION'): StartPosition {
  if (raw === null || raw === 'earliest') return { kind: 'earliest' };
  if (raw === 'latest') return { kind: 'latest' };
  if (raw.startsWith('timestamp:')) {
    const text = raw.slice('timestamp:'.length);
    const timestamp = Date.parse(text);
    if (!/^\d{4}-\d{2}-\d{2}T/.test(text) || Number.isNaN(timestamp)) {
      throw new ConfigError(variable, `"${text}" is not an ISO-8601 time (e.g. 2026-01-31T12:00:00Z)`);
    }
    return { kind: 'timestamp', timestamp };
  }
  if (raw.startsWith('offsets:')) {
    const offsets = new Map<string, number>();
    for (const item of raw.slice('offsets:'.length).split(',')) {
      const match = /^([a-zA-Z0-9._-]+):(\d+)=(\d+)$/.exec(item.trim());
      if (!match) throw new ConfigError(variable, `"${item}" is not <topic>:<partition>=<offset>`);
      offsets.set(`${match[1]}:${match[2]}`, Number(match[3]));
    }
    return { kind: 'offsets', offsets };
  }
  throw new ConfigError(
    variable,
    `"${raw}" is not earliest, latest, timestamp:<ISO-8601> or offsets:<topic>:<partition>=<offset>,...`,
  );
}

/**
 * The first offset for a partition without a checkpoint. `atTimestamp` is the partition's first offset
 * at or after the timestamp (Kafka's offsets-for-times), or its end when there is none. A partition not
 * named by `offsets:` starts at its earliest offset.
 */
export function startOffset(position: StartPosition, mark: Watermarks, atTimestamp?: number): number {
  switch (position.kind) {
    case 'earliest':
      return mark.logStart;
    case 'latest':
      return mark.end;
    case 'timestamp':
      return atTimestamp ?? mark.end;
    case 'offsets':
      return position.offsets.get(`${mark.topic}:${mark.partition}`) ?? mark.logStart;
  }
}
