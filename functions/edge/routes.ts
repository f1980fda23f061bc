import * as z from 'zod';
import { defineRouteGroup } from '../../shared/platform/http/route.ts';

/** The files of `functions/edge/assets/` (built by `npm run build:assets`) that `/assets/{name}` serves. */
export const assetNames = ['scalar.js', 'docs.js', 'playground.js', 'microphone-worklet.js', 'playground.css'] as const;

/**
 * Health, the developer pages (the API's description, its reference, the playground) and the catch-all that answers
 * 404/405 in our envelope for whatever no route matches.
 */
export const edgeRoutes = defineRouteGroup({
  name: 'edge',
  entry: 'functions/edge/handler.ts',
  catchAll: true,
  assets: 'functions/edge/assets',
  routes: {
    health: {
      method: 'GET',
      path: '/health',
      scope: 'public',
      summary: 'Liveness check; no credentials',
      successStatus: 200,
      response: z.object({ status: z.literal('ok') }),
    },
    openApiDocument: {
      method: 'GET',
      path: '/openapi.json',
      scope: 'public',
      summary: "The API's OpenAPI 3.1 description, generated from the route declarations",
      successStatus: 200,
      internal: true,
    },
    apiReference: {
      method: 'GET',
      path: '/docs',
      scope: 'public',
      summary: 'The API reference, rendered from /openapi.json',
      successStatus: 200,
      internal: true,
    },
    changelog: {
      method: 'GET',
      path: '/docs/changelog',
      scope: 'public',
      summary: 'CHANGELOG.md',
      successStatus: 200,
      internal: true,
    },
    playground: {
      method: 'GET',
      path: '/playground',
      scope: 'public',
      summary: 'A browser playground: agents, a streamed chat, the event stream',
      successStatus: 200,
      internal: true,
    },
    asset: {
      method: 'GET',
      path: '/assets/{name}',
      scope: 'public',
      summary: 'Scripts and styles of the developer pages',
      successStatus: 200,
      params: z.object({ name: z.enum(assetNames) }),
      internal: true,
    },
  },
});
