import { listModels } from '../../shared/models/models.ts';
import { deleteProviderKey, getProviderKey, listProviderKeys, organizationCatalog, putProviderKey } from '../../shared/models/provider-keys.ts';
import { createHttpHandler } from '../../shared/platform/http/handler.ts';
import { runtime } from '../../shared/runtime.ts';
import { listVoices } from '../../shared/models/voices.ts';
import { modelRoutes } from './routes.ts';

export const handler = createHttpHandler(
  modelRoutes,
  {
    listModels: async ({ deps, principal, query }) => listModels(await organizationCatalog(deps, principal.orgId), query),
    listVoices: async ({ deps, query }) => listVoices(deps.catalog, query),
    listProviderKeys: ({ deps, principal }) => listProviderKeys(deps, principal.orgId),
    putProviderKey: ({ deps, principal, params, body }) => putProviderKey(deps, principal.orgId, params.provider, body),
    getProviderKey: ({ deps, principal, params }) => getProviderKey(deps, principal.orgId, params.provider),
    deleteProviderKey: ({ deps, principal, params }) => deleteProviderKey(deps, principal.orgId, params.provider),
  },
  runtime,
);
