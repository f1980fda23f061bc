import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The tests mostly wait on DynamoDB Local, servers and timers, not on a core: more files at once than cores.
    // Each worker has its own table (test/support/database.ts).
    maxWorkers: Math.max(3, availableParallelism() - 1),
    globalSetup: ['test/support/global-setup.ts'],
    // Backstops, not waits: a test ends as soon as its conditions hold. On a laptop busy with other work (or
    // `.ci/run-under-load`), an integration test of many requests may take minutes and must still pass.
    testTimeout: 120_000,
    hookTimeout: 300_000,
    env: { POWERTOOLS_LOG_LEVEL: 'SILENT' },
  },
});
