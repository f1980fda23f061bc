import type { Principal } from '../platform/http/principal.ts';
import { currentPlan, type AdmissionDeps } from './admission.ts';
import type { RateDecision, RateLimit, RateLimiter } from './rate-limit.ts';

export interface RequestLimitDeps extends AdmissionDeps {
  rateLimiter: RateLimiter;
}

export interface RequestRateCheck {
  admitted: boolean;
  retryAfterSeconds: number;
  /** `RateLimit-Policy` and `RateLimit` (IETF draft-ietf-httpapi-ratelimit-headers), for every response. */
  headers: Record<string, string>;
}

/**
 * The rate limits of one request: the organization's plan, and the API key's own limit when it has one (checked
 * first: it is the lower one). Each is a bucket of the shared rate limiter.
 */
export async function checkRequestRate(deps: RequestLimitDeps, principal: Principal): Promise<RequestRateCheck> {
  const plan = await currentPlan(deps, principal.orgId);
  const limits: { name: string; bucket: string; limit: RateLimit }[] = [];
  if (principal.rateLimit && principal.via.kind === 'apiKey') limits.push({ name: 'key', bucket: `key#${principal.via.keyId}`, limit: principal.rateLimit });
  limits.push({ name: 'org', bucket: 'org', limit: { requestsPerSecond: plan.requestsPerSecond, burst: plan.burst } });
  const decisions: RateDecision[] = [];
  for (const { bucket, limit } of limits) {
    const decision = await deps.rateLimiter.admit(principal.orgId, bucket, limit);
    decisions.push(decision);
    if (!decision.admitted) break;
  }
  const refused = decisions.find((decision) => !decision.admitted);
  const shown = limits.slice(0, decisions.length);
  return {
    admitted: !refused,
    retryAfterSeconds: refused?.retryAfterSeconds ?? 0,
    headers: {
      'ratelimit-policy': shown.map(({ name, limit }) => `"${name}";q=${limit.requestsPerSecond};w=1`).join(', '),
      ratelimit: shown.map(({ name }, index) => `"${name}";r=${decisions[index]?.remaining ?? 0};t=${decisions[index]?.admitted ? 1 : decisions[index]?.retryAfterSeconds}`).join(', '),
    },
  };
}
