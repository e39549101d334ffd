/**
 * The day's count of a table's load jobs under tasks counting at once, against the Firestore emulator:
 * conditioned writes, no transaction (a task killed inside one held the lock, and the next run's count
 * waited 20 s for it and failed), and never more than the budget.
 */
import { afterAll, expect, test } from 'vitest';
import { PartitionWaitsError } from '../../functions/kernel/errors.js';
import { createLoadQuota } from '../../functions/modes/load/load-quota.js';
import { stackClients, uniqueName } from '../support/stack.js';

const clients = await stackClients();
afterAll(() => clients.close());

test('twelve tasks counting at once take exactly the loads allowed, the rest wait', async () => {
  const pipelineId = uniqueName('quota');
  const noon = Date.UTC(2026, 11, 6, 12);
  // At noon with 10 a day and a burst of 0: 5 allowed so far.
  const quota = () =>
    createLoadQuota({
      firestore: clients.firestore,
      pipelineId,
      dataset: 'd',
      table: 't',
      perDay: 10,
      burst: 0,
      now: () => noon,
    });
  const outcomes = await Promise.allSettled(Array.from({ length: 12 }, () => quota().take()));
  expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(5);
  const refused = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
  expect(refused).toHaveLength(7);
  for (const r of refused) expect(r.reason).toBeInstanceOf(PartitionWaitsError);
  const doc = await clients.firestore
    .collection('pipelines')
    .doc(pipelineId)
    .collection('loads')
    .doc('d.t@2026-12-06')
    .get();
  expect(doc.get('count')).toBe(5);
});
