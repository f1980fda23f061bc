/**
 * One of several processes sharing a rate limit, as Lambda instances do: it offers requests to its own
 * RateLimiter (on the shared table) at a steady pace and prints, as one JSON line, when each was admitted and how
 * many table writes it made. Settings come from the environment.
 */
import { parseConfig } from '../../shared/platform/config.ts';
import { RateLimiter } from '../../shared/billing/rate-limit.ts';
import { createDocumentClient } from '../../shared/platform/store/dynamo.ts';
import { DynamoRateLimitStore } from '../../shared/billing/rate-limit-store.ts';
import type { RateLimitStore } from '../../shared/billing/ports.ts';

const config = parseConfig();
const store = new DynamoRateLimitStore(createDocumentClient(config), config.TABLE_NAME);
let writes = 0;
const counted: RateLimitStore = { advance: (...args) => ((writes += 1), store.advance(...args)) };
const limiter = new RateLimiter(counted);
const orgId = process.env.LIMIT_ORG_ID as string;
const limit = { requestsPerSecond: Number(process.env.LIMIT_RPS), burst: Number(process.env.LIMIT_BURST) };
const offeredPerSecond = Number(process.env.OFFERED_RPS);
const startAt = Number(process.env.START_AT);
const durationMs = Number(process.env.DURATION_MS);

await new Promise((resolve) => setTimeout(resolve, Math.max(0, startAt - Date.now())));
const admitted: number[] = [];
const refusals: number[] = [];
const pending: Promise<void>[] = [];
for (let index = 0; startAt + (index * 1000) / offeredPerSecond < startAt + durationMs; index += 1) {
  const due = startAt + (index * 1000) / offeredPerSecond;
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, due - Date.now())));
  pending.push(
    limiter.admit(orgId, 'org', limit).then((decision) => {
      if (decision.admitted) admitted.push(Date.now());
      else refusals.push(decision.retryAfterSeconds);
    }),
  );
}
await Promise.all(pending);
process.stdout.write(`${JSON.stringify({ admitted, refusals, writes })}\n`);
