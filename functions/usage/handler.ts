import { billingProviderFrom, meterEventSinkFrom } from '../../shared/billing/providers.ts';
import { forgetStanding } from '../../shared/billing/admission.ts';
import type { BillingProvider, MeterEventSink } from '../../shared/billing/ports.ts';
import { changeSubscription, getSubscription, startCheckout, type SubscriptionChange } from '../../shared/billing/subscriptions.ts';
import { getUsage } from '../../shared/billing/usage-report.ts';
import { createHttpHandler } from '../../shared/platform/http/handler.ts';
import { runtime, type Runtime } from '../../shared/runtime.ts';
import { usageRoutes } from './routes.ts';

type UsageRuntime = Runtime & { billing: BillingProvider; metering: { usage: Runtime['usage']; meterEvents: MeterEventSink } | undefined };
let processRuntime: UsageRuntime | undefined;

/**
 * The runtime plus the configured billing provider, loaded on the first change, and where usage billed by use is
 * reported (Stripe's meters) when Stripe bills.
 */
function usageRuntime(): UsageRuntime {
  if (!processRuntime) {
    const base = runtime();
    let billing: Promise<BillingProvider> | undefined;
    const provider = (): Promise<BillingProvider> => (billing ??= billingProviderFrom(base.config, base.plans));
    const meterEvents = meterEventSinkFrom(base.config);
    processRuntime = {
      ...base,
      billing: {
        name: base.config.BILLING_PROVIDER,
        apply: async (subscription, change) => (await provider()).apply(subscription, change),
        startCheckout: async (subscription, request) => (await provider()).startCheckout(subscription, request),
      },
      metering: meterEvents && { usage: base.usage, meterEvents },
    };
  }
  return processRuntime;
}

/** A change applies at once to this process's own checks; other processes see it within QUOTA_CACHE_SECONDS. */
async function change(deps: UsageRuntime, orgId: string, subscriptionChange: SubscriptionChange) {
  const changed = await changeSubscription(deps, orgId, subscriptionChange);
  forgetStanding(orgId);
  return changed;
}

export const handler = createHttpHandler(
  usageRoutes,
  {
    getUsage: ({ deps, principal, query }) => getUsage(deps, principal.orgId, query),
    listPlans: async ({ deps }) => ({ data: deps.plans.list() }),
    getSubscription: ({ deps, principal }) => getSubscription(deps, principal.orgId),
    changePlan: ({ deps, principal, body }) => change(deps, principal.orgId, { kind: 'changePlan', plan: body.plan }),
    startCheckout: ({ deps, principal, body }) => startCheckout(deps, principal.orgId, body),
    pauseSubscription: ({ deps, principal }) => change(deps, principal.orgId, { kind: 'pause' }),
    resumeSubscription: ({ deps, principal }) => change(deps, principal.orgId, { kind: 'resume' }),
    cancelSubscription: ({ deps, principal }) => change(deps, principal.orgId, { kind: 'cancel' }),
    stripeWebhook: async ({ deps, rawBody, headers }) => {
      // Loaded on the first webhook: Stripe's library is most of this function's code.
      const { handleStripeWebhook } = await import('../../shared/billing/stripe-webhook.ts');
      return handleStripeWebhook(deps, rawBody, headers['stripe-signature']);
    },
  },
  usageRuntime,
);
