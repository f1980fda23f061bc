import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { expireAbandonedSession } from '../../shared/conversations/sessions.ts';
import { logger } from '../../shared/platform/logger.ts';
import { runtime } from '../../shared/runtime.ts';
import { observedHandler } from '../../shared/platform/invocation.ts';

/**
 * DynamoDB Streams consumer for TTL deletions of session expiry items: the session becomes EXPIRED (with its
 * events) unless it was active since. Correctness never waits for this (every access checks the window); it
 * makes expiry durable and announced even for sessions nobody touches again. Failed records are retried.
 */
async function handle(event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> {
  const failures: { itemIdentifier: string }[] = [];
  for (const record of event.Records) {
    const image = record.dynamodb?.OldImage;
    if (record.eventName !== 'REMOVE' || image?.entity?.S !== 'sessionExpiry') continue;
    const orgId = image.orgId?.S;
    const sessionId = image.sessionId?.S;
    if (!orgId || !sessionId) continue;
    try {
      await expireAbandonedSession(runtime(), orgId, sessionId);
    } catch (error) {
      logger.error('could not expire session', { orgId, sessionId, error: error as Error });
      failures.push({ itemIdentifier: record.dynamodb?.SequenceNumber ?? '' });
    }
  }
  return { batchItemFailures: failures };
}

export const handler = observedHandler('session-expiry', handle);
