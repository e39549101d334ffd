import { defineConfig } from 'vitest/config';
import { SlowestFirstSequencer } from './test/support/sequencer.js';

// Unit tests need nothing; integration and end-to-end tests share one local stack that the global setup
// brings up (and takes down again only if it started it).

/**
 * How many test files run at once, of every project in one pool (KBD_TEST_WORKERS, 3 by default): the
 * end-to-end files spend most of their time waiting on processes and leases, the unit files on the CPU,
 * side by side they fill the two cores (test/support/sequencer.ts starts the longest first).
 */
const workers = Number(process.env.KBD_TEST_WORKERS ?? process.env.KBD_E2E_WORKERS ?? 3);

/** Unit files that need a module registry of their own (see the `unit` project). */
const isolatedUnitFiles = [
  'test/unit/infra*.test.ts',
  'test/unit/run-sharing.test.ts',
  'test/unit/kafkajs-patch.test.ts',
];

export default defineConfig({
  test: {
    // No metadata server on loopback: tell the Google auth library not to look for one.
    env: { METADATA_SERVER_DETECTION: 'none' },
    // Every run also writes its report, for `node scripts/suite-times.mjs` (where the time went).
    reporters: ['default', 'json'],
    outputFile: { json: 'test-results/suite.json' },
    sequence: { sequencer: SlowestFirstSequencer },
    projects: [
      // One group (groupOrder 0) and one number of workers for all: vitest runs a group's files in one pool.
      // The pure unit files share their workers' module registry (isolate: false): the suite is bound by
      // its two cores, and importing the functions' modules anew for each of 70 files cost more CPU than
      // their tests (180 s of CPU for the unit files isolated, see docs/development.md). Files that need a
      // registry of their own stay isolated: the Pulumi program (one per file, under mocks), vi.mock, and
      // kafkajs's patch.
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          exclude: isolatedUnitFiles,
          isolate: false,
          // Beside end-to-end files that keep the cores busy, a pure test can take longer than its 5 s.
          testTimeout: 20_000,
          hookTimeout: 60_000,
          maxWorkers: workers,
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          name: 'unit-isolated',
          include: isolatedUnitFiles,
          testTimeout: 20_000,
          // A Pulumi program under mocks in a beforeAll: 10 s was too little once on two busy cores.
          hookTimeout: 60_000,
          maxWorkers: workers,
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/support/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          maxWorkers: workers,
          sequence: { groupOrder: 0 },
        },
      },
      {
        // End-to-end files side by side, each with its own BigQuery emulator (test/support/stack.ts's
        // useOwnBigQuery) and its own topics, pipelines, datasets and subscriptions; a file that freezes or
        // kills services does it to a stack of its own (useOwnStack), never to the one the others share.
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          globalSetup: ['test/support/global-setup.ts'],
          testTimeout: 900_000,
          hookTimeout: 120_000,
          maxWorkers: workers,
          sequence: { groupOrder: 0 },
        },
      },
    ],
  },
});
