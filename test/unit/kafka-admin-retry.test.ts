import kafkajs, { type Admin } from 'kafkajs';
import { describe, expect, test } from 'vitest';
import { DrainError } from '../../functions/kernel/errors.js';
import { createMemoryLogger } from '../../functions/kernel/logger.js';
import { onNewAdmin } from '../../functions/sources/kafka-client.js';

const { KafkaJSProtocolError } = kafkajs;
const fast = { attempts: 4, initialDelayMs: 1, maxDelayMs: 2 };

/** kafkajs' own error for a broker's answer, as its admin throws it. */
function answer(type: string, code: number, retriable: boolean) {
  // kafkajs builds it from its table of codes; its typings admit only the message.
  const fromTable = { message: `the broker said ${type}`, type, code, retriable } as unknown as Error;
  return new KafkaJSProtocolError(fromTable);
}

/** A Kafka whose admins answer, in turn, what `answers` says: an error to throw or a value. */
function kafkaAnswering(answers: unknown[]) {
  const made: { connected: boolean; disconnected: boolean }[] = [];
  const kafka = {
    admin() {
      const state = { connected: false, disconnected: false };
      made.push(state);
      return {
        connect: async () => {
          state.connected = true;
        },
        disconnect: async () => {
          state.disconnected = true;
        },
      } as unknown as Admin;
    },
  };
  const call = async () => {
    const next = answers.shift();
    if (next instanceof Error) throw next;
    return next;
  };
  return { kafka, made, call };
}

describe('an admin call while a partition’s leader moves', () => {
  test('NOT_LEADER_FOR_PARTITION and LEADER_NOT_AVAILABLE: tried again on a new admin each time, then answered', async () => {
    const { kafka, made, call } = kafkaAnswering([
      answer('NOT_LEADER_FOR_PARTITION', 6, true),
      answer('LEADER_NOT_AVAILABLE', 5, true),
      'the offsets',
    ]);
    const logger = createMemoryLogger();
    await expect(onNewAdmin(kafka, 'read watermarks', logger, call, fast)).resolves.toBe('the offsets');
    expect(made).toHaveLength(3);
    expect(made.every((a) => a.connected && a.disconnected)).toBe(true);
    expect(logger.lines.map((l) => l.attempt)).toEqual([1, 2]);
  });

  test('any other answer is final at once, retriable or not: a missing topic, a refused authorization', async () => {
    for (const error of [
      answer('UNKNOWN_TOPIC_OR_PARTITION', 3, true),
      answer('TOPIC_AUTHORIZATION_FAILED', 29, false),
    ]) {
      const { kafka, made, call } = kafkaAnswering([error, 'never']);
      const thrown = await onNewAdmin(kafka, 'read watermarks', createMemoryLogger(), call, fast).catch(
        (e: unknown) => e,
      );
      expect(thrown).toBeInstanceOf(DrainError);
      expect((thrown as DrainError).code).toBe(error.type);
      expect((thrown as DrainError).message).toContain('kafka read watermarks');
      expect(made).toHaveLength(1);
      expect(made[0]!.disconnected).toBe(true);
    }
  });

  test('a leader that never settles: the last answer is thrown after the policy’s attempts', async () => {
    const moving = Array.from({ length: 10 }, () => answer('NOT_LEADER_FOR_PARTITION', 6, true));
    const { kafka, made, call } = kafkaAnswering(moving);
    const thrown = await onNewAdmin(kafka, 'read offsets for a time', createMemoryLogger(), call, fast).catch(
      (e: unknown) => e,
    );
    expect((thrown as DrainError).code).toBe('NOT_LEADER_FOR_PARTITION');
    expect((thrown as DrainError).retriable).toBe(true);
    expect(made).toHaveLength(fast.attempts);
  });
});
