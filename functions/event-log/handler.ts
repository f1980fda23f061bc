import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { eventStreamSettings, logEvents } from '../../shared/webhooks/event-stream.ts';
import { eventsOfItem } from '../../shared/webhooks/table-stream-events.ts';
import { logger } from '../../shared/platform/logger.ts';
import { runtime } from '../../shared/runtime.ts';
import { observedHandler } from '../../shared/platform/invocation.ts';

/**
 * Appends the domain events of each new outbox or message item to its organization's event log, which the SSE
 * event stream reads. Records are logged concurrently (log order is the time of the write, not stream order); the
 * first failed record is reported, so it and those after it are retried (events are logged at least once).
 */
async function handle(event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> {
  const deps = runtime();
  const settings = eventStreamSettings(deps.config);
  const outcomes = await Promise.allSettled(
    event.Records.map(async (record) => {
      const image = record.dynamodb?.NewImage;
      if (record.eventName !== 'INSERT' || !image) return;
      await logEvents(deps, eventsOfItem(unmarshall(image as Record<string, AttributeValue>)), settings);
    }),
  );
  const failed = outcomes.findIndex((outcome) => outcome.status === 'rejected');
  if (failed < 0) return { batchItemFailures: [] };
  const record = event.Records[failed];
  logger.error('could not log events; retrying from this record', {
    error: (outcomes[failed] as PromiseRejectedResult).reason as Error,
    sequenceNumber: record?.dynamodb?.SequenceNumber,
  });
  return { batchItemFailures: [{ itemIdentifier: record?.dynamodb?.SequenceNumber ?? '' }] };
}

export const handler = observedHandler('event-log', handle);
