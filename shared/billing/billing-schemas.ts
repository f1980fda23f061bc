import * as z from 'zod';
import { timestamp } from '../platform/schemas/common.ts';

/** The metrics the spec names; each has a monthly quota in a plan. */
export const quotaMetrics = ['chat_messages', 'voice_seconds', 'knowledge_chunks'] as const;
export type QuotaMetric = (typeof quotaMetrics)[number];

export const subscriptionStatuses = ['active', 'past_due', 'canceled', 'paused'] as const;
export type SubscriptionStatus = (typeof subscriptionStatuses)[number];

const quota = z.number().int().min(0).nullable();

export const planSchema = z.strictObject({
  id: z.string().regex(/^[a-z0-9_-]{1,40}$/),
  name: z.string().min(1).max(100),
  /** Per calendar month (UTC); null is unlimited. */
  quotas: z.strictObject({ chat_messages: quota, voice_seconds: quota, knowledge_chunks: quota }),
  concurrentCalls: quota,
  requestsPerSecond: z.number().positive(),
  burst: z.number().int().positive(),
});
export type Plan = z.output<typeof planSchema>;

export const listPlansResponse = z.object({ data: z.array(planSchema) });

export const subscriptionSchema = z.object({
  subscriptionId: z.string(),
  status: z.enum(subscriptionStatuses),
  currentPlan: z.string(),
  provider: z.enum(['manual', 'stripe']),
  currentPeriodStart: timestamp,
  currentPeriodEnd: timestamp,
  pastDueSince: timestamp.optional(),
  createdAt: timestamp,
  updatedAt: timestamp,
});
export type Subscription = z.output<typeof subscriptionSchema>;

export const stripeWebhookResponse = z.object({ received: z.literal(true), applied: z.boolean() });

export const changePlanBody = z.strictObject({ plan: z.string().min(1).max(40) });
