import { defineConfig } from 'vitest/config';
import { SlowestFirstSequencer } from './test/support/sequencer.js';

// Unit tests need nothing; integration and end-to-end tests share one local stack that the global setup
// brings up (and takes down again only if it started it).

/** How many end-to-end files run at once (KBD_E2E_WORKERS). */
const e2eWorkers = Number(process.env.KBD_E2E_WORKERS ?? 3);

export default defineConfig({
  test: {
    // No metadata server on loopback: tell the Google auth library not to look for one.
    env: { METADATA_SERVER_DETECTION: 'none' },
    // Every run also writes its report, for `node scripts/suite-times.mjs` (where the time went).
    reporters: ['default', 'json'],
    outputFile: { json: 'test-results/suite.json' },
    sequence: { sequencer: SlowestFirstSequencer },
    projects: [
      // Unit and integration files side by side (the integration files wait on services much of the time).
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          maxWorkers: 3,
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
          maxWorkers: 3,
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
          maxWorkers: e2eWorkers,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
