import { forgetStanding } from '../../shared/domain/admission.ts';
import { changeSubscription, getSubscription, type SubscriptionChange } from '../../shared/domain/subscriptions.ts';
import { getUsage } from '../../shared/domain/usage-report.ts';
import { createHttpHandler } from '../../shared/http/handler.ts';
import { runtime, type Runtime } from '../../shared/runtime.ts';
import { usageRoutes } from './routes.ts';

/** A change applies at once to this process's own checks; other processes see it within QUOTA_CACHE_SECONDS. */
async function change(deps: Runtime, orgId: string, subscriptionChange: SubscriptionChange) {
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
  },
  runtime,
);
