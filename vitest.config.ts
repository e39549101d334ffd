import { defineConfig } from 'vitest/config';

// Unit tests need nothing; integration and end-to-end tests share one local stack that the global setup
// brings up (and takes down again only if it started it).
export default defineConfig({
  test: {
    // No metadata server on loopback: tell the Google auth library not to look for one.
    env: { METADATA_SERVER_DETECTION: 'none' },
    projects: [
      { test: { name: 'unit', include: ['test/unit/**/*.test.ts'], sequence: { groupOrder: 0 } } },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/support/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          maxWorkers: 2,
          sequence: { groupOrder: 1 },
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          globalSetup: ['test/support/global-setup.ts'],
          testTimeout: 900_000,
          hookTimeout: 120_000,
          fileParallelism: false,
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
