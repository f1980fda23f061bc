import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { analyticsRecordOf, analyticsSubject, type AnalyticsRecord } from '../../shared/billing/analytics.ts';
import { perOrganization } from '../../shared/events/per-organization.ts';
import { runtime } from '../../shared/runtime.ts';
import { observedHandler } from '../../shared/platform/invocation.ts';

/**
 * Maintains the analytics aggregates from the table's stream: session starts, ends and messages, each counted
 * exactly once into its agent's hour and day items. The agent of a message and the facts of an ended session
 * come from one BatchGetItem of the batch's sessions. A failure retries the batch from the organization's first
 * record, which the per-session markers make harmless.
 */
async function handle(event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> {
  const deps = runtime();
  return perOrganization(
    event,
    (item) => {
      const subject = analyticsSubject(item);
      return subject && { orgId: subject.orgId, value: { item, subject } };
    },
    async (orgId, entries) => {
      const needingFacts = entries.filter(({ subject }) => subject.kind !== 'created').map(({ subject }) => subject.sessionId);
      const facts = await deps.analytics.sessionFacts(orgId, needingFacts);
      const records = entries
        .map(({ item, subject }) => {
          const sessionFacts = facts.get(subject.sessionId);
          return analyticsRecordOf(item, sessionFacts?.agentId ?? 'unknown', sessionFacts);
        })
        .filter((record): record is AnalyticsRecord => record !== undefined);
      await deps.analytics.record(orgId, records);
    },
    'could not aggregate analytics; retrying from the first record of the organization',
  );
}

export const handler = observedHandler('analytics-aggregate', handle);
