import { inject } from 'vitest';

/**
 * This test worker's table in the run's DynamoDB Local. Each worker has its own (test/support/global-setup.ts makes
 * one per worker), so that the stream poller of one test file hands its consumers only the records of the files of
 * its worker, which run one after another.
 */
export const testTableName = (): string => `${inject('tablePrefix')}-${process.env.VITEST_POOL_ID ?? '1'}`;
