import { envelopeEvent } from '../events/events.ts';
import type { QuotaMetric } from './billing-schemas.ts';

/** The events billing records in its outbox, with the subscription or the usage roll-up they report. */
export const billingEvents = {
  subscriptionUpdated: (orgId: string, at: string, data: { subscriptionId: string; status: string; currentPlan: string }) =>
    envelopeEvent(orgId, 'subscription.updated', at, data),

  usageUpdated: (orgId: string, at: string, data: { period: { start: string; end: string }; metrics: Record<QuotaMetric, number> }) =>
    envelopeEvent(orgId, 'usage.updated', at, data),
};
