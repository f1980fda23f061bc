import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { analyticsRecordsOf, analyticsSubject } from '../../shared/billing/analytics.ts';
import { perOrganization } from '../../shared/events/per-organization.ts';
import { runtime } from '../../shared/runtime.ts';
import { observedHandler } from '../../shared/platform/invocation.ts';

/**
 * Maintains the analytics aggregates from the table's stream: session starts, ends and messages, each counted
 * exactly once into its agent's hour and day items, in one write per organization of the batch. A message's agent
 * is its session's, read once per session (with the facts of an ended session). A failure retries the batch from
 * the organization's first record, which the per-session markers make harmless.
 */
async function handle(event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> {
  const deps = runtime();
  return perOrganization(
    event,
    (item) => {
      const subject = analyticsSubject(item);
      return subject && { orgId: subject.orgId, value: item };
    },
    async (orgId, items) => deps.analytics.record(orgId, await analyticsRecordsOf(items, (sessionIds) => deps.analytics.sessionFacts(orgId, sessionIds))),
    'could not aggregate analytics; retrying from the first record of the organization',
  );
}

export const handler = observedHandler('analytics-aggregate', handle);
