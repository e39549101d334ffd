/**
 * A group's tables as one stream sink (routes sharing a topic by `when`): a flush prepares each table's
 * streams (and its error table's) from the rows and letters of the records routed to it, so that one
 * intent names every stream of the flush, in every table it feeds. A stream commits at most once and is
 * committed by its name, whatever its table, so recovery finishes such an intent as any other.
 */
import type { DeadLetter, KafkaRecord, PartitionRef } from '../../kernel/records.js';
import type { EncodedRow, StreamSink } from '../../sinks/contracts.js';

export function fanOutStreams(
  targets: readonly { readonly streams: StreamSink }[],
  /** Which target a record was routed to (unset: the first). */
  targetOf: WeakMap<KafkaRecord, number>,
): StreamSink {
  const sinks = targets.map((t) => t.streams);
  const first = sinks[0]!;
  const sum = async (partition: PartitionRef, from: number, to: number) => {
    const held = await Promise.all(sinks.map((s) => s.heldInRange(partition, from, to)));
    return {
      rows: held.reduce((n, h) => n + h.rows, 0),
      deadLetters: held.reduce((n, h) => n + h.deadLetters, 0),
    };
  };
  return {
    async prepare(rows, letters, ingestedAt) {
      const rowsOf = sinks.map((): EncodedRow[] => []);
      const lettersOf = sinks.map((): DeadLetter[] => []);
      for (const row of rows) rowsOf[targetOf.get(row.record) ?? 0]!.push(row);
      for (const letter of letters) lettersOf[targetOf.get(letter.record) ?? 0]!.push(letter);
      const prepared = await Promise.all(
        sinks.map((sink, i) =>
          rowsOf[i]!.length + lettersOf[i]!.length === 0
            ? { streams: [], rejected: [] }
            : sink.prepare(rowsOf[i]!, lettersOf[i]!, ingestedAt),
        ),
      );
      return {
        streams: prepared.flatMap((p) => p.streams),
        rejected: prepared.flatMap((p) => p.rejected),
      };
    },
    startEncoding: (shape, format) => first.startEncoding(shape, format),
    warmUp: async () => void (await Promise.all(sinks.map((s) => s.warmUp()))),
    commit: (streams) => first.commit(streams),
    streamState: (stream) => first.streamState(stream),
    heldInRange: sum,
    async heldOffsets(partition, from, to) {
      const held = await Promise.all(sinks.map((s) => s.heldOffsets(partition, from, to)));
      return {
        rows: new Map(held.flatMap((h) => [...h.rows])),
        deadLetters: new Map(held.flatMap((h) => [...h.deadLetters])),
      };
    },
  };
}
