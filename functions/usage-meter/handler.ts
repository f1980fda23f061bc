import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { meteredRecordOf, type MeteredRecord } from '../../shared/domain/usage.ts';
import { logger } from '../../shared/logger.ts';
import { scheduleRollup } from '../../shared/domain/usage-rollup.ts';
import { usageRollupRuntime } from '../../shared/usage-rollup-runtime.ts';

/**
 * Counts usage from the table's stream: each organization's records of the batch in one transaction (per 100
 * items), exactly once whatever the retries (shared/store/usage-store.ts). Organizations are counted side by
 * side; when one fails, the batch is retried from its first record, which the meters make harmless for the
 * records already counted.
 */
export async function handler(event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> {
  const deps = usageRollupRuntime();
  const byOrg = new Map<string, { firstIndex: number; records: MeteredRecord[] }>();
  event.Records.forEach((record, index) => {
    const image = record.dynamodb?.NewImage;
    if (record.eventName !== 'INSERT' || !image) return;
    const metered = meteredRecordOf(unmarshall(image as Record<string, AttributeValue>));
    if (!metered) return;
    const org = byOrg.get(metered.orgId) ?? { firstIndex: index, records: [] };
    org.records.push(metered);
    byOrg.set(metered.orgId, org);
  });
  const orgs = [...byOrg.entries()];
  // Each organization with usage in the batch gets a roll-up, even on a replay that adds nothing: the first
  // delivery may have counted and then failed before queuing it.
  const outcomes = await Promise.allSettled(
    orgs.map(async ([orgId, { records }]) => {
      await deps.usage.record(orgId, records);
      await scheduleRollup(deps, orgId);
    }),
  );
  const failedAt = outcomes.flatMap((outcome, index) => (outcome.status === 'rejected' ? [index] : []));
  if (failedAt.length === 0) return { batchItemFailures: [] };
  const first = Math.min(...failedAt.map((index) => orgs[index]?.[1].firstIndex ?? 0));
  for (const index of failedAt) {
    logger.error('could not count usage; retrying from the first record of the organization', {
      orgId: orgs[index]?.[0],
      error: (outcomes[index] as PromiseRejectedResult).reason as Error,
    });
  }
  return { batchItemFailures: [{ itemIdentifier: event.Records[first]?.dynamodb?.SequenceNumber ?? '' }] };
}
