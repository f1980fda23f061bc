import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { scheduleRollup } from '../../shared/billing/usage-rollup.ts';
import { meteredRecordOf, stockChangeOrgOf } from '../../shared/billing/usage.ts';
import { perOrganization } from '../../shared/events/per-organization.ts';
import { usageRollupRuntime } from '../../shared/billing/usage-rollup-runtime.ts';
import { observedHandler } from '../../shared/platform/invocation.ts';

/**
 * Counts usage from the table's stream: each organization's records of the batch in one transaction (per 100
 * items), exactly once whatever the retries (shared/billing/exactly-once-counter.ts). When one organization fails,
 * the batch is retried from its first record, which the markers make harmless for the records already counted.
 */
async function handle(event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> {
  const deps = usageRollupRuntime();
  return perOrganization(
    event,
    (item) => {
      const record = meteredRecordOf(item);
      if (record) return { orgId: record.orgId, value: record };
      // A stock changed (knowledge chunks stored or released): nothing to count, only a roll-up to schedule.
      const stockOrgId = stockChangeOrgOf(item);
      return stockOrgId === undefined ? undefined : { orgId: stockOrgId, value: undefined };
    },
    async (orgId, picked) => {
      const records = picked.filter((record) => record !== undefined);
      if (records.length > 0) await deps.usage.record(orgId, records);
      // Even a replay that adds nothing schedules a roll-up: the first delivery may have counted, then failed before.
      await scheduleRollup(deps, orgId);
    },
    'could not count usage; retrying from the first record of the organization',
  );
}

export const handler = observedHandler('usage-meter', handle);
