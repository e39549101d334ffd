import type { DeadLetters } from '../kernel/ports.js';
import type { DeadLetter } from '../kernel/records.js';

/** Publishes dead letters in offset order (as a reader of the topic saw them in Kafka); resolves when acknowledged. */
export async function publishDeadLetters(letters: DeadLetter[], deadLetters: DeadLetters): Promise<void> {
  if (letters.length === 0) return;
  letters.sort((a, b) => a.record.offset - b.record.offset);
  await deadLetters.publish(letters);
}
