import * as z from 'zod';
import { UnknownPlanError } from '../platform/errors.ts';
import { planSchema, type Plan } from './billing-schemas.ts';

/** The plans every deployment has unless PLANS replaces them (docs/usage-and-billing.md#plans). */
export const defaultPlans: readonly Plan[] = [
  {
    id: 'free',
    name: 'Free',
    quotas: { chat_messages: 1_000, voice_seconds: 600, knowledge_chunks: 1_000 },
    concurrentCalls: 1,
    requestsPerSecond: 5,
    burst: 10,
    meteredMetrics: [],
  },
  {
    id: 'pro',
    name: 'Pro',
    quotas: { chat_messages: 100_000, voice_seconds: 60_000, knowledge_chunks: 100_000 },
    concurrentCalls: 10,
    requestsPerSecond: 50,
    burst: 100,
    meteredMetrics: [],
  },
  {
    id: 'enterprise',
    name: 'Enterprise',
    quotas: { chat_messages: null, voice_seconds: null, knowledge_chunks: null },
    concurrentCalls: 100,
    requestsPerSecond: 500,
    burst: 1_000,
    meteredMetrics: [],
  },
];

/** The plan a new organization starts on. */
export const initialPlanId = 'free';

export interface PlanCatalog {
  list(): readonly Plan[];
  /** Throws UnknownPlanError for a plan the catalog does not hold. */
  get(planId: string): Plan;
}

const overridesSchema = z.record(z.string(), planSchema.omit({ id: true }));

/** The default plans with PLANS (JSON) applied: each entry replaces the plan of that id or adds one. */
export function createPlanCatalog(config: { PLANS?: string | undefined }): PlanCatalog {
  const plans = new Map(defaultPlans.map((plan) => [plan.id, plan]));
  if (config.PLANS) {
    let raw: unknown;
    try {
      raw = JSON.parse(config.PLANS);
    } catch {
      throw new Error('Invalid configuration: PLANS is not valid JSON');
    }
    const parsed = overridesSchema.safeParse(raw);
    if (!parsed.success) throw new Error(`Invalid configuration: PLANS: ${parsed.error.issues.map((issue) => `${issue.path.join('.')} ${issue.message}`).join('; ')}`);
    for (const [id, plan] of Object.entries(parsed.data)) plans.set(id, planSchema.parse({ id, ...plan }));
  }
  if (!plans.has(initialPlanId)) throw new Error(`Invalid configuration: PLANS must keep a "${initialPlanId}" plan`);
  const list = [...plans.values()];
  return {
    list: () => list,
    get(planId) {
      const plan = plans.get(planId);
      if (!plan) throw new UnknownPlanError(`No plan "${planId}"; the plans are ${list.map((known) => known.id).join(', ')}.`);
      return plan;
    },
  };
}
