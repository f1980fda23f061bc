import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { analyticsRecordOf, analyticsSubject, type AnalyticsRecord } from '../../shared/domain/analytics.ts';
import { logger } from '../../shared/logger.ts';
import { runtime } from '../../shared/runtime.ts';

/**
 * Maintains the analytics aggregates from the table's stream: session starts, ends and messages, each counted
 * exactly once into its agent's hour and day items. The agent of a message and the facts of an ended session
 * come from one BatchGetItem of the batch's sessions. A failure retries the batch from the organization's first
 * record, which the per-session markers make harmless.
 */
export async function handler(event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> {
  const deps = runtime();
  const byOrg = new Map<string, { firstIndex: number; items: Record<string, unknown>[] }>();
  event.Records.forEach((record, index) => {
    const image = record.dynamodb?.NewImage;
    if (record.eventName !== 'INSERT' || !image) return;
    const item = unmarshall(image as Record<string, AttributeValue>);
    const subject = analyticsSubject(item);
    if (!subject) return;
    const org = byOrg.get(subject.orgId) ?? { firstIndex: index, items: [] };
    org.items.push(item);
    byOrg.set(subject.orgId, org);
  });
  const orgs = [...byOrg.entries()];
  const outcomes = await Promise.allSettled(
    orgs.map(async ([orgId, { items }]) => {
      const subjects = items.map((item) => analyticsSubject(item)).filter((subject) => subject !== undefined);
      const facts = await deps.analytics.sessionFacts(orgId, subjects.filter((subject) => subject.kind !== 'created').map((subject) => subject.sessionId));
      const records = items
        .map((item, index) => {
          const sessionFacts = facts.get(subjects[index]?.sessionId ?? '');
          return analyticsRecordOf(item, sessionFacts?.agentId ?? 'unknown', sessionFacts);
        })
        .filter((record): record is AnalyticsRecord => record !== undefined);
      await deps.analytics.record(orgId, records);
    }),
  );
  const failedAt = outcomes.flatMap((outcome, index) => (outcome.status === 'rejected' ? [index] : []));
  if (failedAt.length === 0) return { batchItemFailures: [] };
  for (const index of failedAt) {
    logger.error('could not aggregate analytics; retrying from the first record of the organization', {
      orgId: orgs[index]?.[0],
      error: (outcomes[index] as PromiseRejectedResult).reason as Error,
    });
  }
  const first = Math.min(...failedAt.map((index) => orgs[index]?.[1].firstIndex ?? 0));
  return { batchItemFailures: [{ itemIdentifier: event.Records[first]?.dynamodb?.SequenceNumber ?? '' }] };
}
