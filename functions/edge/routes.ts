import * as z from 'zod';
import { defineRouteGroup } from '../../shared/http/route.ts';

/** Health, and the catch-all that answers 404/405 in our envelope for whatever no route matches. */
export const edgeRoutes = defineRouteGroup({
  name: 'edge',
  entry: 'functions/edge/handler.ts',
  catchAll: true,
  routes: {
    health: {
      method: 'GET',
      path: '/health',
      scope: 'public',
      summary: 'Liveness check; no credentials',
      successStatus: 200,
      response: z.object({ status: z.literal('ok') }),
    },
  },
});
