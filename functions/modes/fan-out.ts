/**
 * A group's writer made of its routes' own writers, for the modes where each table's part is durable on
 * its own and a range read again is written again harmlessly (merge: by origin, exactly once; insert-all:
 * at least once, as that mode is): each batch split by route, the parts written side by side, the counts
 * summed. The drain commits the checkpoint only once every part is durable.
 */
import type { Writer, WrittenBatch } from '../kernel/ports.js';
import type { RecordRouter } from '../records/record-router.js';

export function fanOutWriters(members: readonly Writer[], router: RecordRouter): Writer {
  return {
    async recover(lease, signal) {
      for (const member of members) {
        const recovery = await member.recover(lease, signal);
        if (recovery.commit !== undefined || recovery.startAt !== undefined) return recovery;
      }
      return {};
    },
    async begin(lease, from, end) {
      await Promise.all(members.map((m) => m.begin(lease, from, end)));
    },
    async write(batch, signal) {
      const parts = await router.split(batch.records, signal);
      const written = await Promise.all(
        parts.map((records, i) =>
          records.length === 0 ? undefined : members[i]!.write({ ...batch, records }, signal),
        ),
      );
      const sum = (pick: (w: WrittenBatch) => number | undefined) =>
        written.reduce((n, w) => n + (w === undefined ? 0 : (pick(w) ?? 0)), 0);
      const filtered = sum((w) => w.filtered);
      return {
        rows: sum((w) => w.rows),
        deadLetters: sum((w) => w.deadLetters),
        tombstones: sum((w) => w.tombstones),
        ...(filtered > 0 ? { filtered } : {}),
      };
    },
  };
}
