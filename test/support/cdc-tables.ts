/**
 * `cdc` mode's end-to-end helpers: a keyed pipeline, its changes produced by kcat (a key's changes in one
 * partition), what the table must hold (each key's last change; a null value deletes it; a value that is no
 * JSON is a dead letter and changes nothing), and the table as it stands, read with BigQuery's own client.
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { GoogleClients } from '../../functions/google/clients.js';
import { readTopicRecords } from './faults.js';
import { createPipeline, leasesFree, type Pipeline, runJob, waitFor } from './job.js';
import { kcatProduceKeyed } from './producers.js';

export const upsertSchema = [
  { name: 'id', type: 'STRING', mode: 'REQUIRED' },
  { name: 'v', type: 'INT64', mode: 'NULLABLE' },
  { name: 'note', type: 'STRING', mode: 'NULLABLE' },
];

function normalise(v: unknown): unknown {
  if (v === null || v === undefined) return null;
  if (typeof v === 'object' && 'value' in (v as object)) return String((v as { value: unknown }).value);
  if (typeof v === 'object' && v.constructor?.name === 'Big') return String(v);
  return typeof v === 'number' ? v : String(v);
}

export function randomChanges(count: number, keys: number, start: number) {
  return Array.from({ length: count }, (_, i) => ({
    id: Math.floor(Math.random() * keys),
    v: Math.random() < 0.15 ? null : start + i,
  }));
}

export function cdcTables(clients: GoogleClients) {
  async function cdcPipeline(partitions: number, fields: object[], env: Record<string, string>) {
    const pipeline = await createPipeline(clients, partitions, {
      BQ_WRITE_MODE: 'cdc',
      BQ_MAX_STALENESS: '0',
      DRAIN_BUDGET_SECONDS: '20',
      ...env,
    });
    const schemaFile = join(tmpdir(), `${pipeline.id}.cdc.schema.json`);
    writeFileSync(schemaFile, JSON.stringify(fields));
    pipeline.env.BQ_SCHEMA_FILE = schemaFile;
    return pipeline;
  }

  /** The table, as id → the other columns (JSON text); a key twice fails. */
  async function tableState(pipeline: Pipeline, columns: string[]): Promise<Map<string, string>> {
    const [rows] = await clients.bigquery.query(
      `SELECT id, ${columns.join(', ')} FROM \`${pipeline.dataset}.${pipeline.table}\``,
    );
    const state = new Map<string, string>();
    for (const row of rows as Record<string, unknown>[]) {
      expect(state.has(String(row.id)), `id ${row.id} twice in the table`).toBe(false);
      state.set(String(row.id), JSON.stringify(columns.map((c) => normalise(row[c]))));
    }
    return state;
  }

  /** What the table must hold: each key's last change in the topic (a null value deletes the key). */
  async function expectedUpserts(pipeline: Pipeline): Promise<Map<string, string>> {
    const state = new Map<string, string>();
    for (const records of (await readTopicRecords(pipeline.topic)).values()) {
      for (const r of records) {
        const id = r.key!.toString();
        if (r.value === null) state.delete(id);
        else if (r.value.toString().startsWith('{')) {
          const v = JSON.parse(r.value.toString()) as { v: number; note?: string };
          state.set(id, JSON.stringify([v.v, v.note ?? null]));
        }
      }
    }
    return state;
  }

  /** kcat, keyed: key i always to partition i % partitions; `v` null a delete, `bad` a value that is no JSON. */
  async function produceChanges(
    pipeline: Pipeline,
    partitions: number,
    changes: { id: number; v: number | null; bad?: boolean }[],
  ) {
    for (let p = 0; p < partitions; p++) {
      const mine = changes.filter((c) => c.id % partitions === p);
      if (mine.length === 0) continue;
      await kcatProduceKeyed(
        pipeline.topic,
        p,
        mine.map((c) => ({
          key: `k${c.id}`,
          value: c.bad
            ? `not json ${c.v}`
            : c.v === null
              ? null
              : JSON.stringify({ id: `k${c.id}`, v: c.v, note: `v${c.v}` }),
        })),
      );
    }
  }

  async function untilCaughtUp(pipeline: Pipeline) {
    // A killed run's leases block its partitions until they expire: a run that skips them all is no proof.
    await waitFor('leases of the killed runs to expire', () => leasesFree(clients, pipeline), 30_000);
    for (let i = 0; i < 20; i++) {
      const run = await runJob(pipeline.env);
      if (run.code === 0 && run.summary.stopReason === 'caught_up' && run.summary.lag === 0) return i + 1;
    }
    throw new Error('the drain did not catch up in 20 runs');
  }

  return { cdcPipeline, tableState, expectedUpserts, produceChanges, untilCaughtUp };
}
