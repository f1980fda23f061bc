import * as z from 'zod';
import { timestamp } from '../platform/schemas/common.ts';

/** The metrics the spec names; each has a monthly quota in a plan. */
export const quotaMetrics = ['chat_messages', 'voice_seconds', 'knowledge_chunks'] as const;
export type QuotaMetric = (typeof quotaMetrics)[number];

/**
 * The metrics a plan can bill by use (Stripe Billing Meters, docs/usage-and-billing.md#metered-billing): flows
 * counted per period. `knowledge_chunks` is a stock (what is stored now), which a sum of events cannot bill.
 */
export const meterableMetrics = ['chat_messages', 'voice_seconds'] as const;
export type MeterableMetric = (typeof meterableMetrics)[number];

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
  /** Billed by use, on top of any flat price, when the billing provider is Stripe; the quotas still apply. */
  meteredMetrics: z
    .array(z.enum(meterableMetrics))
    .refine((metrics) => new Set(metrics).size === metrics.length, { error: 'must not name a metric twice' })
    .default([]),
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

const planId = z.string().min(1).max(40);

export const changePlanBody = z.strictObject({ plan: planId });

const returnUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).max(2000);

export const checkoutBody = z.strictObject({
  plan: planId,
  /** Where the customer's browser goes once paid; `{CHECKOUT_SESSION_ID}` is replaced by the session's id. */
  successUrl: returnUrl,
  /** Where it goes when the customer leaves the payment page. */
  cancelUrl: returnUrl,
});

export const checkoutSchema = z.object({
  /** The provider's id of the payment page (Stripe's Checkout Session). */
  id: z.string(),
  /** Send the customer here to pay; the plan applies once the payment is confirmed to us. */
  url: z.url(),
  plan: z.string(),
  expiresAt: timestamp,
});
export type Checkout = z.output<typeof checkoutSchema>;
