import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { eventStreamSettings, logEvents } from '../../shared/webhooks/event-stream.ts';
import { eventsOfItem } from '../../shared/webhooks/table-stream-events.ts';
import { logger } from '../../shared/platform/logger.ts';
import { runtime } from '../../shared/runtime.ts';
import { observedHandler } from '../../shared/platform/invocation.ts';

/**
 * Appends the domain events of the batch's new outbox and message items to their organizations' event logs, which
 * the SSE event stream reads: 25 entries a request, not one request per event. When it fails, the whole batch is
 * retried from its first record (events are logged at least once).
 */
async function handle(event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> {
  const deps = runtime();
  const records = event.Records.filter((record) => record.eventName === 'INSERT' && record.dynamodb?.NewImage);
  const events = records.flatMap((record) => eventsOfItem(unmarshall(record.dynamodb?.NewImage as Record<string, AttributeValue>)));
  try {
    await logEvents(deps, events, eventStreamSettings(deps.config));
    return { batchItemFailures: [] };
  } catch (error) {
    const sequenceNumber = records[0]?.dynamodb?.SequenceNumber ?? '';
    logger.error('could not log events; retrying the batch', { error: error as Error, sequenceNumber });
    return { batchItemFailures: [{ itemIdentifier: sequenceNumber }] };
  }
}

export const handler = observedHandler('event-log', handle);
