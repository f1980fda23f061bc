import { changePlanBody, listPlansResponse, stripeWebhookResponse, subscriptionSchema } from '../../shared/schemas/billing.ts';
import { usageQuery, usageResponse } from '../../shared/schemas/usage.ts';
import { defineRouteGroup } from '../../shared/http/route.ts';

export const usageRoutes = defineRouteGroup({
  name: 'usage',
  entry: 'functions/usage/handler.ts',
  routes: {
    getUsage: {
      method: 'GET',
      path: '/v1/chat/usage',
      scope: 'usage:read',
      summary: 'Usage as a time series (hour, day or month) and the current period beside the plan quotas',
      successStatus: 200,
      query: usageQuery,
      response: usageResponse,
      overlapAuthentication: true,
    },
    listPlans: {
      method: 'GET',
      path: '/v1/chat/plans',
      scope: 'billing:read',
      summary: 'The plan catalog: monthly quotas, concurrent calls, request rate and burst',
      successStatus: 200,
      response: listPlansResponse,
    },
    getSubscription: {
      method: 'GET',
      path: '/v1/chat/subscription',
      scope: 'billing:read',
      summary: 'The organization subscription: status, plan, current period',
      successStatus: 200,
      response: subscriptionSchema,
      overlapAuthentication: true,
    },
    changePlan: {
      method: 'PATCH',
      path: '/v1/chat/subscription',
      scope: 'billing:write',
      summary: 'Change the plan (a canceled subscription starts anew on it)',
      successStatus: 200,
      body: changePlanBody,
      response: subscriptionSchema,
    },
    pauseSubscription: {
      method: 'POST',
      path: '/v1/chat/subscription/pause',
      scope: 'billing:write',
      summary: 'Pause the subscription: consuming operations answer 403 until resumed',
      successStatus: 200,
      response: subscriptionSchema,
    },
    resumeSubscription: {
      method: 'POST',
      path: '/v1/chat/subscription/resume',
      scope: 'billing:write',
      summary: 'Resume a paused subscription',
      successStatus: 200,
      response: subscriptionSchema,
    },
    stripeWebhook: {
      method: 'POST',
      path: '/v1/billing/stripe/webhook',
      scope: 'public',
      summary: 'Stripe events (payment failed or paid, subscription paused, resumed, deleted), verified by Stripe-Signature',
      successStatus: 200,
      response: stripeWebhookResponse,
    },
    cancelSubscription: {
      method: 'POST',
      path: '/v1/chat/subscription/cancel',
      scope: 'billing:write',
      summary: 'Cancel the subscription; reads keep working',
      successStatus: 200,
      response: subscriptionSchema,
    },
  },
});
