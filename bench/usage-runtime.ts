/**
 * Child process of the usage benchmark, on the database the parent names: the rate limiter's table writes per
 * request at a steady load under the limit; the per-turn cost of the quota and rate checks with warm caches
 * beside an empty call; and the analytics overview over aggregates standing for 100,000 sessions beside the bare
 * Query of the same items. Reports its figures to the parent and exits.
 */
import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { useLocalDatabase } from '../infra/local/environment.ts';
import { assertMayConsume } from '../shared/billing/admission.ts';
import { analyticsOverview } from '../shared/billing/analytics-report.ts';
import { sketchBin } from '../shared/billing/analytics.ts';
import { RateLimiter } from '../shared/billing/rate-limit.ts';
import { checkRequestRate } from '../shared/billing/request-limits.ts';
import { bucketBounds, bucketOf } from '../shared/billing/usage.ts';
import type { RateLimitStore } from '../shared/billing/ports.ts';
import { runtime } from '../shared/runtime.ts';
import { keys } from '../shared/platform/store/keys.ts';
import { DynamoRateLimitStore } from '../shared/billing/rate-limit-store.ts';
import { percentiles } from './turns.ts';
import type { UsageBenchResult } from './usage.ts';

useLocalDatabase({ endpoint: process.env.BENCH_DYNAMODB_ENDPOINT as string, tableName: process.env.TABLE_NAME as string });
process.env.QUOTA_CACHE_SECONDS = '60';
const deps = runtime();

// 1. Rate limiter: 200 requests a second for 10 s against the enterprise plan's 500/s, one process.
const limit = { requestsPerSecond: 500, burst: 1_000 };
const offeredPerSecond = 200;
const rateSeconds = 10;
const store = new DynamoRateLimitStore(deps.documentClient, deps.config.TABLE_NAME);
let writes = 0;
const counting: RateLimitStore = { advance: (...args) => ((writes += 1), store.advance(...args)) };
const limiter = new RateLimiter(counting);
const limitedOrg = crypto.randomUUID();
let admitted = 0;
let steadyWrites = 0;
let steadyAdmitted = 0;
const pending: Promise<void>[] = [];
const startAt = performance.now();
for (let index = 0; index < offeredPerSecond * rateSeconds; index += 1) {
  const due = startAt + (index * 1000) / offeredPerSecond;
  const wait = due - performance.now();
  if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
  // The first second sizes the lease to the load: counted from the second one.
  if (index === offeredPerSecond) {
    steadyWrites = writes;
    steadyAdmitted = admitted;
  }
  pending.push(limiter.admit(limitedOrg, 'org', limit).then((decision) => void (decision.admitted && (admitted += 1))));
}
await Promise.all(pending);
const rateLimit = {
  requests: offeredPerSecond * rateSeconds,
  requestsPerSecond: offeredPerSecond,
  limit,
  writesPerRequest: (writes - steadyWrites) / Math.max(1, admitted - steadyAdmitted),
  admitted,
};

// 2. A turn's checks with warm caches: the quota check and the request's rate check, as the turn and pipeline make them.
const orgId = crypto.randomUUID();
await deps.orgs.ensure({ id: orgId, name: 'bench', createdAt: new Date().toISOString() });
await deps.subscriptions.replace(undefined, { orgId, subscriptionId: 'sub_bench', status: 'active', currentPlan: 'enterprise', provider: 'manual', createdAt: new Date().toISOString(), updatedAt: new Date().toISOString() }, {
  eventId: crypto.randomUUID(),
  type: 'subscription.updated',
  orgId,
  createdAt: new Date().toISOString(),
  payload: {},
});
const principal = { orgId, scopes: ['*'], via: { kind: 'apiKey' as const, keyId: 'bench' } };
const checks = async () => {
  await assertMayConsume(deps, orgId, 'chat_messages');
  await checkRequestRate(deps, principal);
};
const floor = async () => undefined;
const calls = 2_000;
const timed = async (work: () => Promise<unknown>) => {
  const samples: number[] = [];
  for (let call = 0; call < calls; call += 1) {
    const begin = performance.now();
    await work();
    samples.push((performance.now() - begin) * 1000);
    // At the enterprise rate: the bucket never runs dry, so the figure is the check, not a refusal.
    if (call % 200 === 199) await new Promise((resolve) => setTimeout(resolve, 500));
  }
  return percentiles(samples);
};
await checks();
await new Promise((resolve) => setTimeout(resolve, 200));
const checksUs = { ...(await timed(checks)), calls };
const checksFloorUs = await timed(floor);

// 3. Analytics: 30 days × 10 agents of day items, 720 hours × 10 agents of hour items, standing for 100,000 sessions.
const analyticsOrg = crypto.randomUUID();
const agents = Array.from({ length: 10 }, () => crypto.randomUUID());
const sessions = 100_000;
const now = new Date();
const days = Array.from({ length: 30 }, (_, index) => bucketOf(new Date(now.getTime() - index * 86_400_000).toISOString(), 'day'));
const hours = Array.from({ length: 720 }, (_, index) => bucketOf(new Date(bucketBounds(now, 'hour').start.getTime() - index * 3_600_000).toISOString(), 'hour'));
const countsFor = (share: number) => ({
  sessions: share,
  ended: share,
  'type:CHAT': share,
  'platform:SDK': share,
  'state:CLOSED': share,
  'reason:USER_CLOSED': share,
  messages: share * 6,
  messagesInEnded: share * 6,
  toolCalls: share,
  [sketchBin('durationSeconds', 95)]: share,
  [sketchBin('messagesPerSession', 6)]: share,
  [sketchBin('modelFirstTokenMs', 420)]: share * 3,
  [sketchBin('platformMs', 2.5)]: share * 3,
  'sentiment:POSITIVE': share,
  'resolution:RESOLVED': share,
  'intent:billing': share,
});
const items = [
  ...days.flatMap((day) => agents.map((agentId) => ({ ...keys.analyticsAggregate(analyticsOrg, 'day', day, agentId), entity: 'analyticsAggregate', ...countsFor(Math.round(sessions / 300)) }))),
  ...hours.flatMap((hour) => agents.map((agentId) => ({ ...keys.analyticsAggregate(analyticsOrg, 'hour', hour, agentId), entity: 'analyticsAggregate', ...countsFor(Math.round(sessions / 7200)) }))),
];
for (let start = 0; start < items.length; start += 25) {
  await deps.documentClient.send(new BatchWriteCommand({ RequestItems: { [deps.config.TABLE_NAME]: items.slice(start, start + 25).map((Item) => ({ PutRequest: { Item } })) } }));
}
const queries = 100;
const query = { granularity: 'day' as const, from: new Date(now.getTime() - 29 * 86_400_000).toISOString(), to: now.toISOString() };
const overviewSamples: number[] = [];
const querySamples: number[] = [];
for (let run = 0; run < queries; run += 1) {
  let begin = performance.now();
  await analyticsOverview(deps, analyticsOrg, query);
  overviewSamples.push(performance.now() - begin);
  begin = performance.now();
  await deps.analytics.aggregates(analyticsOrg, 'day', bucketOf(query.from, 'day'), bucketOf(query.to, 'day'));
  querySamples.push(performance.now() - begin);
}

const result: UsageBenchResult = {
  rateLimit,
  checksUs,
  checksFloorUs,
  analytics: { sessions, items: items.length, overviewMs: { ...percentiles(overviewSamples), queries }, queryMs: percentiles(querySamples) },
};
process.send?.(result, () => process.exit(0));
