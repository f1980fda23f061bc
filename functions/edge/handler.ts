import { createHttpHandler } from '../../shared/platform/http/handler.ts';
import { runtime } from '../../shared/runtime.ts';
import { routeGroups } from '../route-groups.ts';
import { developerPages } from './developer-pages.ts';
import { edgeRoutes } from './routes.ts';

export const handler = createHttpHandler(edgeRoutes, { health: async () => ({ status: 'ok' }), ...developerPages(routeGroups) }, runtime, {
  unmatched: routeGroups.flatMap((group) => Object.values(group.routes)),
});
