import { createHttpHandler } from '../../shared/platform/http/handler.ts';
import { runtime } from '../../shared/runtime.ts';
import { namedComponents, routeGroups } from '../route-groups.ts';
import { developerPages } from './developer-pages.ts';
import { edgeRoutes } from './routes.ts';

export const handler = createHttpHandler(edgeRoutes, { health: async () => ({ status: 'ok' }), ...developerPages(routeGroups, namedComponents) }, runtime, {
  unmatched: routeGroups.flatMap((group) => Object.values(group.routes)),
});
