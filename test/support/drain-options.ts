import type { DrainOptions } from './run-drain.js';

/** The drain options the unit tests start from: small batches, short leases, room to spare. */
export const testDrainOptions: DrainOptions = {
  pipelineId: 'p',
  runId: 'run-1',
  execution: 'local',
  taskIndex: 0,
  taskCount: 1,
  topics: ['t'],
  budgetMs: 10_000,
  leaseTtlMs: 5_000,
  batchMaxRecords: 4,
  batchMaxBytes: 1_000_000,
  retentionGapPolicy: 'fail',
  startPosition: { kind: 'earliest' },
  settleMs: 1_000,
  partitionConcurrency: 3,
  inFlightMaxBytes: 10_000_000,
  firestoreConcurrency: 4,
  shareGraceMs: 0,
  tombstones: 'dead-letter',
  alertThresholds: { idleSeconds: 300, stallSeconds: 900, backlogRecords: 1_000_000, backlogGrowingRuns: 3 },
};
