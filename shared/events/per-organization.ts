import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { logger } from '../platform/logger.ts';

/**
 * Hands a stream batch's new items to `work`, one call per organization with what `pick` took from its items,
 * organizations side by side. When any fails, the batch is reported failed from the earliest first record of a
 * failed organization, so it and everything after are retried: `work` must be idempotent (the counters are).
 */
export async function perOrganization<T>(
  event: DynamoDBStreamEvent,
  pick: (item: Record<string, unknown>) => { orgId: string; value: T } | undefined,
  work: (orgId: string, values: T[]) => Promise<void>,
  failureMessage: string,
): Promise<DynamoDBBatchResponse> {
  const byOrg = new Map<string, { firstIndex: number; values: T[] }>();
  event.Records.forEach((record, index) => {
    const image = record.dynamodb?.NewImage;
    if (record.eventName !== 'INSERT' || !image) return;
    const picked = pick(unmarshall(image as Record<string, AttributeValue>));
    if (!picked) return;
    const org = byOrg.get(picked.orgId) ?? { firstIndex: index, values: [] };
    org.values.push(picked.value);
    byOrg.set(picked.orgId, org);
  });
  const orgs = [...byOrg.entries()];
  const outcomes = await Promise.allSettled(orgs.map(([orgId, { values }]) => work(orgId, values)));
  const failedAt = outcomes.flatMap((outcome, index) => (outcome.status === 'rejected' ? [index] : []));
  if (failedAt.length === 0) return { batchItemFailures: [] };
  for (const index of failedAt) {
    logger.error(failureMessage, { orgId: orgs[index]?.[0], error: (outcomes[index] as PromiseRejectedResult).reason as Error });
  }
  const first = Math.min(...failedAt.map((index) => orgs[index]?.[1].firstIndex ?? 0));
  return { batchItemFailures: [{ itemIdentifier: event.Records[first]?.dynamodb?.SequenceNumber ?? '' }] };
}
