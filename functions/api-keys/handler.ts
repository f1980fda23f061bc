import { createApiKey, deleteApiKey, listApiKeys } from '../../shared/identity/api-keys.ts';
import { createHttpHandler } from '../../shared/platform/http/handler.ts';
import { runtime } from '../../shared/runtime.ts';
import { apiKeyRoutes } from './routes.ts';

export const handler = createHttpHandler(
  apiKeyRoutes,
  {
    createApiKey: ({ deps, principal, body, sealResponse }) => createApiKey(deps, principal, body, sealResponse),
    listApiKeys: ({ deps, principal, query }) => listApiKeys(deps, principal.orgId, query),
    deleteApiKey: ({ deps, principal, params }) => deleteApiKey(deps, principal.orgId, params.id),
  },
  runtime,
);
