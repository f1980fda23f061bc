import { billingProviderFrom } from '../../shared/billing/providers.ts';
import { forgetStanding } from '../../shared/billing/admission.ts';
import type { BillingProvider } from '../../shared/billing/ports.ts';
import { changeSubscription, getSubscription, type SubscriptionChange } from '../../shared/billing/subscriptions.ts';
import { getUsage } from '../../shared/billing/usage-report.ts';
import { createHttpHandler } from '../../shared/platform/http/handler.ts';
import { runtime, type Runtime } from '../../shared/runtime.ts';
import { usageRoutes } from './routes.ts';

type UsageRuntime = Runtime & { billing: BillingProvider };
let processRuntime: UsageRuntime | undefined;
let billing: Promise<BillingProvider> | undefined;

/** The runtime plus a billing provider that tells the configured one, loaded on the first change. */
function usageRuntime(): UsageRuntime {
  if (!processRuntime) {
    const base = runtime();
    const provider = (): Promise<BillingProvider> => (billing ??= billingProviderFrom(base.config));
    processRuntime = { ...base, billing: { name: base.config.BILLING_PROVIDER, apply: async (subscription, change) => (await provider()).apply(subscription, change) } };
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
