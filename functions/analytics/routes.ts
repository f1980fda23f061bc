import { agentAnalyticsParams, agentAnalyticsQuery, analyticsQuery, analyticsResponse } from '../../shared/billing/analytics-schemas.ts';
import { defineRouteGroup } from '../../shared/platform/http/route.ts';

export const analyticsRoutes = defineRouteGroup({
  name: 'analytics',
  entry: 'functions/analytics/handler.ts',
  routes: {
    overview: {
      method: 'GET',
      path: '/v1/chat/analytics/overview',
      scope: 'analytics:read',
      summary: 'Sessions, durations, messages, analysis outcomes, tools, timings and voice minutes, with a series by day or hour',
      successStatus: 200,
      query: analyticsQuery,
      response: analyticsResponse,
      overlapAuthentication: true,
    },
    agentAnalytics: {
      method: 'GET',
      path: '/v1/chat/analytics/agents/{agentId}',
      scope: 'analytics:read',
      summary: 'The same for one agent; the series as CSV with Accept: text/csv',
      successStatus: 200,
      params: agentAnalyticsParams,
      query: agentAnalyticsQuery,
      response: analyticsResponse,
      alsoAnswers: ['text/csv'],
      overlapAuthentication: true,
    },
  },
});
