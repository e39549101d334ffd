import { createHash } from 'node:crypto';
import type { PubSub, Topic } from '@google-cloud/pubsub';
import { grpcError } from '../google/grpc-errors.js';
import { exactHeadersText } from '../kernel/exact-headers.js';
import type { Logger } from '../kernel/logger.js';
import type { DeadLetters } from '../kernel/ports.js';
import type { DeadLetter } from '../kernel/records.js';
import { type RetryPolicy, withRetry } from '../kernel/retry.js';

export function pubsubError(error: unknown, what: string): Error {
  return grpcError('pubsub', error, what);
}

/** Pub/Sub's limits: attribute values of at most 1024 bytes, messages of at most 10 MB. */
const maxAttributeBytes = 1024;
const maxDataBytes = 9 * 1024 * 1024;

export function truncateUtf8(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return text;
  // Cut on a character boundary, then mark the cut.
  let end = maxBytes - 3;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString('utf8') + '...';
}

/** The DESIGN.md dead-letter message: the original value unchanged, its origin and reason as attributes. */
export function deadLetterMessage(letter: DeadLetter, context: { pipeline: string; execution: string }) {
  const { record } = letter;
  const value = record.value ?? Buffer.alloc(0);
  const attributes: Record<string, string> = {
    pipeline: context.pipeline,
    source_topic: record.topic,
    source_partition: String(record.partition),
    source_offset: String(record.offset),
    source_timestamp: new Date(record.timestamp).toISOString(),
    error_kind: letter.kind,
    error_message: truncateUtf8(letter.message, maxAttributeBytes),
    execution: context.execution,
  };
  if (record.key !== null) {
    const key = record.key.toString('base64');
    if (key.length <= maxAttributeBytes) attributes.key_base64 = key;
    else attributes.key_sha256 = createHash('sha256').update(record.key).digest('hex');
  }
  // The headers exactly as Kafka carried them (order, repeated names, bytes), for the replay to give them
  // back (`kafka_headers`); when they do not fit one attribute, the letter says so and its replay refuses.
  const exact = exactHeadersText(record);
  if (exact !== undefined) {
    if (Buffer.byteLength(exact) <= maxAttributeBytes) attributes.kafka_headers = exact;
    else attributes.kafka_headers_missing = `${Buffer.byteLength(exact)} bytes: more than an attribute holds`;
  }
  // And as `header_<name>` attributes, for people and subscription filters, as far as Pub/Sub's 100
  // attributes and 1024-byte values allow; the rest are dropped (and counted).
  let dropped = 0;
  for (const [name, headerValue] of Object.entries(record.headers)) {
    const attribute = `header_${name}`;
    if (
      Object.keys(attributes).length >= 95 ||
      Buffer.byteLength(attribute) > 256 ||
      Buffer.byteLength(headerValue) > maxAttributeBytes
    ) {
      dropped++;
      continue;
    }
    attributes[attribute] = headerValue;
  }
  if (dropped > 0) attributes.headers_dropped = String(dropped);
  let data = value;
  if (value.length > maxDataBytes) {
    // Too large for Pub/Sub: keep what fits, and enough to recognise the original.
    data = value.subarray(0, maxDataBytes);
    attributes.error_kind = 'oversize';
    attributes.value_size = String(value.length);
    attributes.value_sha256 = createHash('sha256').update(value).digest('hex');
  }
  return { data, attributes };
}

/**
 * Publishes dead letters and resolves only once Pub/Sub acknowledged every one of them; letters whose
 * publish failed transiently are published again (a duplicate dead letter is harmless, a lost one is not).
 */
export function createPubSubDeadLetters(
  pubsub: PubSub,
  options: { topic: string; pipeline: string; execution: string; retry: RetryPolicy; logger: Logger },
): DeadLetters {
  const topic: Topic = pubsub.topic(options.topic, {
    batching: { maxMessages: 500, maxMilliseconds: 10 },
  });
  return {
    async publish(letters) {
      let pending = [...letters];
      await withRetry(
        options.retry,
        async () => {
          const results = await Promise.allSettled(
            pending.map((letter) => topic.publishMessage(deadLetterMessage(letter, options))),
          );
          const failed = pending.filter((_, i) => results[i]!.status === 'rejected');
          if (failed.length > 0) {
            const first = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
            pending = failed;
            throw pubsubError(
              first.reason,
              `publish ${failed.length} dead letters to topic ${options.topic}`,
            );
          }
        },
        (error, attempt, delayMs) =>
          options.logger.warn('dead-letter publish failed; retrying', {
            error,
            attempt,
            delayMs,
            letters: pending.length,
          }),
      );
    },
  };
}
