/**
 * What the dispatcher counts as tasks running when it cannot ask Cloud Run (`--launch local`, decide-only):
 * the distinct tasks behind the live leases. A task drains its route groups under one owner each
 * (`{runId}-r{n}`), and an operator's `seek` holds leases of its own (`seek:…`): neither is another task
 * (issue #78: counted as tasks, they made the dispatcher launch too few).
 */

import type { Firestore } from '@google-cloud/firestore';
import { Timestamp } from '@google-cloud/firestore';
import { describe, expect, test } from 'vitest';
import { viewPipeline } from '../../functions/dispatch/observe.js';
import type { Source } from '../../functions/kernel/ports.js';

const now = 1_700_000_000_000;

/** The partitions' documents as Firestore would return them (only what viewPipeline reads). */
function firestoreWith(owners: (string | null)[]): Firestore {
  const docs = owners.map((owner, p) => ({
    id: `t~${p}`,
    data: () => ({
      nextOffset: 0,
      leaseOwner: owner,
      leaseExpiresAt: Timestamp.fromMillis(now + 10_000),
    }),
  }));
  const partitions = { get: async () => ({ docs }) };
  return { collection: () => ({ doc: () => ({ collection: () => partitions }) }) } as unknown as Firestore;
}

const sourceOf = (count: number) =>
  ({
    watermarks: async () =>
      Array.from({ length: count }, (_, p) => ({ topic: 't', partition: p, logStart: 0, end: 10 })),
  }) as unknown as Source;

describe('the tasks running, as the leases show them', () => {
  test("a task's route drains are one task; an operator's seek is none", async () => {
    const owners = [
      'run-t0-0a1b2c3d-r0',
      'run-t0-0a1b2c3d-r1',
      'run-t0-0a1b2c3d-r2',
      'seek:ops@example.com:a1b2c3',
      'run-t1-9f8e7d6c',
      null,
    ];
    const view = await viewPipeline(
      { firestore: firestoreWith(owners), source: sourceOf(owners.length) },
      'p',
      ['t'],
      now,
    );
    expect(view.leaseOwners).toBe(2);
    expect(view.backlog).toBe(60);
  });

  test('a lease that lapsed is no task', async () => {
    const view = await viewPipeline(
      { firestore: firestoreWith(['run-t0-0a1b2c3d']), source: sourceOf(1) },
      'p',
      ['t'],
      now + 20_000,
    );
    expect(view.leaseOwners).toBe(0);
  });
});
