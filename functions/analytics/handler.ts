import { analyticsCsv, analyticsOverview } from '../../shared/billing/analytics-report.ts';
import { createHttpHandler, RawBody } from '../../shared/platform/http/handler.ts';
import { runtime } from '../../shared/runtime.ts';
import { analyticsRoutes } from './routes.ts';

export const handler = createHttpHandler(
  analyticsRoutes,
  {
    overview: ({ deps, principal, query }) => analyticsOverview(deps, principal.orgId, query),
    agentAnalytics: async ({ deps, principal, params, query, headers }) => {
      const report = await analyticsOverview(deps, principal.orgId, { ...query, agentId: params.agentId });
      return /\btext\/csv\b/i.test(headers.accept ?? '') ? new RawBody(analyticsCsv(report), { 'content-type': 'text/csv; charset=utf-8' }) : report;
    },
  },
  runtime,
);
