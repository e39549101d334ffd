import { describe, expect, test } from 'vitest';
import { grpcError } from '../../functions/google/grpc-errors.js';
import { DrainError } from '../../functions/kernel/errors.js';
import { onceUntilFailure } from '../../functions/kernel/once.js';

describe('onceUntilFailure', () => {
  test('made once and shared while it holds; made again after it failed', async () => {
    let made = 0;
    const answers = [new Error('503'), 'ok', 'never'];
    const get = onceUntilFailure(async () => {
      const answer = answers[made++]!;
      if (answer instanceof Error) throw answer;
      return answer;
    });
    await expect(Promise.all([get(), get()])).rejects.toThrow('503');
    expect(made).toBe(1); // two callers, one attempt
    expect(await get()).toBe('ok');
    expect(await get()).toBe('ok');
    expect(made).toBe(2);
  });
});

describe('grpcError', () => {
  test.each([
    [14, true],
    [4, true],
    [13, true],
    [3, false],
    [7, false],
    [undefined, false],
  ])('code %s: retriable %s, the service and what was done named', (code, retriable) => {
    const error = grpcError('firestore', Object.assign(new Error('boom'), { code }), 'commit');
    expect(error).toBeInstanceOf(DrainError);
    expect(error).toMatchObject({ retriable, message: 'firestore commit: boom', code: String(code) });
  });

  test('programming errors and DrainErrors pass through unchanged', () => {
    const typeError = new TypeError('x is undefined');
    expect(grpcError('pubsub', typeError, 'publish')).toBe(typeError);
    const drainError = new DrainError('already mapped', { retriable: true });
    expect(grpcError('pubsub', drainError, 'publish')).toBe(drainError);
  });
});
