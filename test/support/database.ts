import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { inject } from 'vitest';

/**
 * This test worker's table in the run's DynamoDB Local. Each worker has its own (test/support/global-setup.ts makes
 * one per worker), so that the stream poller of one test file hands its consumers only the records of the files of
 * its worker, which run one after another.
 */
export const testTableName = (): string => `${inject('tablePrefix')}-${process.env.VITEST_POOL_ID ?? '1'}`;

/** DynamoDB Local, read and written directly: what the API stored, or an item as an older release stored it. */
export const testDocuments = DynamoDBDocumentClient.from(
  new DynamoDBClient({ region: 'us-east-1', endpoint: inject('dynamodbEndpoint'), credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }),
);

/** Stored items as the INSERT records DynamoDB Streams would carry them, numbered from `firstSequence`. */
export function insertRecords(items: readonly Record<string, unknown>[], firstSequence = 1): DynamoDBRecord[] {
  return items.map((item, index) => ({
    eventName: 'INSERT',
    dynamodb: { SequenceNumber: String(firstSequence + index).padStart(21, '0'), NewImage: marshall(item, { removeUndefinedValues: true }) as never },
  }));
}
