import { childResult } from './child-result.ts';
import type { Percentiles } from './turns.ts';

/** Section 8: what usage, quotas, rate limits and analytics cost (issue 11). */
export interface UsageBenchResult {
  rateLimit: {
    requests: number;
    requestsPerSecond: number;
    limit: { requestsPerSecond: number; burst: number };
    /** Table writes (lease attempts) per admitted request, once the process's lease size has settled. */
    writesPerRequest: number;
    admitted: number;
  };
  /** The quota and rate checks of one turn (caches warm), beside the floor: an empty async call timed the same way. */
  checksUs: Percentiles & { calls: number };
  checksFloorUs: Percentiles;
  analytics: {
    sessions: number;
    items: number;
    /** GET /v1/chat/analytics/overview's work: the Query of the range and the summary. */
    overviewMs: Percentiles & { queries: number };
    /** Floor: the same Query alone. */
    queryMs: Percentiles;
  };
}

export function measureUsage(dynamodbEndpoint: string, tableName: string): Promise<UsageBenchResult> {
  return childResult<UsageBenchResult>('usage-runtime.ts', dynamodbEndpoint, tableName);
}
