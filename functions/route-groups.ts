import { agentRoutes } from './agents/routes.ts';
import { apiKeyRoutes } from './api-keys/routes.ts';
import { chatMessageRoutes } from './chat-messages/routes.ts';
import { edgeRoutes } from './edge/routes.ts';
import { eventRoutes } from './events/routes.ts';
import { knowledgeRoutes } from './knowledge/routes.ts';
import { modelRoutes } from './models/routes.ts';
import { sessionRoutes } from './sessions/routes.ts';
import { toolRoutes } from './tools/routes.ts';
import { webhookRoutes } from './webhooks/routes.ts';
import type { RouteGroup } from '../shared/http/route.ts';

/** Every endpoint group of the API: the CDK stack deploys these and the local runtime serves these. */
export const routeGroups: readonly RouteGroup[] = [
  edgeRoutes,
  apiKeyRoutes,
  agentRoutes,
  toolRoutes,
  modelRoutes,
  sessionRoutes,
  chatMessageRoutes,
  eventRoutes,
  webhookRoutes,
  knowledgeRoutes,
];
