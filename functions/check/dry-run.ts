/**
 * `check`'s dry run: up to N records a partition, read from where the next run would start, decoded,
 * validated against the table and the rules and encoded as rows, exactly as a run would; nothing written,
 * nothing committed.
 */
import type { Firestore } from '@google-cloud/firestore';
import type { DrainConfig } from '../config/config.js';
import type { Route } from '../config/routes.js';
import { startOffset } from '../config/start-position.js';
import { compileRowEncoder } from '../encoders/row-encoder.js';
import type { RecordNames } from '../formats/record-names.js';
import type { ValueFormat } from '../formats/value-format.js';
import { rulesFor, transformFor } from '../job/wiring.js';
import type { Source } from '../kernel/ports.js';
import type { DeadLetter, KafkaRecord, Position } from '../kernel/records.js';
import { classifyChanges, primaryKeyOfKey } from '../records/changes.js';
import { classifyEach, type RecordPolicy } from '../records/classify.js';
import { createRecordRouter } from '../records/record-router.js';
import { type SchemaField, targetTableSchema } from '../schema/table-schema.js';
import { type DryRunCounts, emptyDryRun } from './report.js';

export interface DryRunRoute {
  readonly route: Route;
  readonly topics: readonly string[];
  readonly columns: readonly SchemaField[];
  readonly format?: ValueFormat;
}

/** How long the dry run may read before it judges what it has. */
const readForMs = 20_000;

export async function dryRun(
  config: DrainConfig,
  ports: { source: Source; firestore: Firestore },
  routes: readonly DryRunRoute[],
  perPartition: number,
  /** Record names from the registry (routes by `when: {recordName}`). */
  names?: RecordNames,
): Promise<DryRunCounts> {
  const counts = emptyDryRun();
  // Routes sharing a topic by `when`: each judges the records it would take (a record none takes, its
  // topic's first route, as a dead letter), as a run's router decides.
  const router = createRecordRouter(
    routes.map((r) => r.route),
    names,
  );
  for (const [index, target] of routes.entries()) {
    const positions = await startPositions(config, ports, target.topics, perPartition);
    const read = await readRecords(ports.source, positions);
    const records = routes.length === 1 ? read : (await router.split(read))[index]!;
    await judge(config, target, records, counts, routes.length === 1 ? undefined : router.refusal);
  }
  return counts;
}

/** Where the next run starts each partition (its checkpoint, else START_POSITION), and where to stop. */
async function startPositions(
  config: DrainConfig,
  ports: { source: Source; firestore: Firestore },
  topics: readonly string[],
  perPartition: number,
): Promise<(Position & { end: number })[]> {
  const marks = await ports.source.watermarks(topics);
  const docs = ports.firestore.collection('pipelines').doc(config.pipelineId).collection('partitions');
  const positions: (Position & { end: number })[] = [];
  const atTime = new Map<string, Map<number, number>>();
  for (const mark of marks) {
    const doc = await docs.doc(`${mark.topic}~${mark.partition}`).get();
    const checkpoint = (doc.get('nextOffset') as number | null | undefined) ?? null;
    let from = checkpoint;
    if (from === null) {
      if (config.startPosition.kind === 'timestamp' && !atTime.has(mark.topic))
        atTime.set(mark.topic, await ports.source.offsetsAt(mark.topic, config.startPosition.timestamp));
      from = startOffset(config.startPosition, mark, atTime.get(mark.topic)?.get(mark.partition));
    }
    from = Math.max(from, mark.logStart);
    const end = Math.min(mark.end, from + perPartition);
    if (from < end) positions.push({ topic: mark.topic, partition: mark.partition, offset: from, end });
  }
  return positions;
}

/** The records of each position up to its end, or what arrived within `readForMs`. */
async function readRecords(source: Source, positions: readonly (Position & { end: number })[]) {
  const records: KafkaRecord[] = [];
  if (positions.length === 0) return records;
  const ends = new Map(positions.map((p) => [`${p.topic}:${p.partition}`, p.end]));
  const reader = await source.open(positions);
  const signal = AbortSignal.timeout(readForMs);
  try {
    while (ends.size > 0) {
      const batch = await reader.next(signal);
      if (batch === undefined) break;
      const key = `${batch.topic}:${batch.partition}`;
      const end = ends.get(key);
      if (end === undefined) continue;
      records.push(...batch.records.filter((r) => r.offset < end));
      if (batch.nextOffset >= end) {
        ends.delete(key);
        reader.finish(batch);
      }
    }
  } finally {
    await reader.close();
  }
  return records;
}

/** Each record's fate as a run would decide it; rows encoded as the Storage Write API takes them. */
async function judge(
  config: DrainConfig,
  target: DryRunRoute,
  records: KafkaRecord[],
  counts: DryRunCounts,
  refuse: RecordPolicy['refuse'],
) {
  const { route } = target;
  const rules = await rulesFor(route, config);
  const transform = await transformFor(route, config);
  const shape = {
    fields: target.columns,
    unknownFields: route.unknownFields,
    fieldNames: route.fieldNames,
    metadata: route.metadata,
  };
  const common = {
    shape,
    ...(rules === undefined ? {} : { rules }),
    ...(transform === undefined ? {} : { transform }),
    ...(refuse === undefined ? {} : { refuse }),
  };
  counts.records += records.length;
  let letters: readonly DeadLetter[];
  const cdc = config.bigquery.cdc;
  if (cdc !== null) {
    // As the cdc writer does: changes by primary key (the record key's fields when none is set).
    const keyed = records.find((r) => r.key !== null);
    const primaryKey =
      cdc.primaryKey.length > 0 ? cdc.primaryKey : (primaryKeyOfKey(keyed?.key ?? null) ?? []);
    const changes = await classifyChanges(
      records,
      {
        ...common,
        format: cdc.changeFormat,
        primaryKey,
        sourceColumns: cdc.sourceColumns,
        ...(target.format === undefined ? {} : { valueFormat: target.format }),
      },
      new Date(),
    );
    counts.rows += changes.rows.length;
    counts.tombstones += changes.tombstones;
    letters = changes.letters;
  } else {
    const encode = compileRowEncoder(targetTableSchema(target.columns, route.metadata));
    const refused: DeadLetter[] = [];
    const classified = await classifyEach(
      records,
      {
        ...common,
        tombstones: config.tombstones,
        ...(target.format === undefined ? {} : { format: target.format }),
      },
      new Date(),
      (row) => {
        try {
          encode(row.row);
        } catch (error) {
          refused.push({ record: row.record, kind: 'rejected', message: (error as Error).message });
        }
      },
    );
    counts.rows += classified.rows - refused.length;
    counts.tombstones += classified.tombstones;
    counts.filtered += classified.filtered;
    letters = [...classified.letters, ...refused];
  }
  for (const letter of letters) {
    counts.deadLetters[letter.kind] = (counts.deadLetters[letter.kind] ?? 0) + 1;
    counts.samples[letter.kind] ??= letter.message;
  }
}
