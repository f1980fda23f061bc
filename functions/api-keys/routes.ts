import { apiKeyPage, createApiKeyBody, createdApiKeySchema, listApiKeysQuery } from '../../shared/identity/api-key-schemas.ts';
import { idParams } from '../../shared/platform/schemas/common.ts';
import { defineRouteGroup } from '../../shared/platform/http/route.ts';

export const apiKeyRoutes = defineRouteGroup({
  name: 'api-keys',
  entry: 'functions/api-keys/handler.ts',
  routes: {
    createApiKey: {
      method: 'POST',
      path: '/v1/chat/api-keys',
      scope: 'keys:manage',
      summary: 'Create an API key; the key is in this response only',
      successStatus: 201,
      response: createdApiKeySchema,
      body: createApiKeyBody,
      idempotent: true,
    },
    listApiKeys: {
      method: 'GET',
      path: '/v1/chat/api-keys',
      scope: 'keys:manage',
      summary: 'List API keys (never the key itself)',
      successStatus: 200,
      response: apiKeyPage,
      query: listApiKeysQuery,
      overlapAuthentication: true,
    },
    deleteApiKey: {
      method: 'DELETE',
      path: '/v1/chat/api-keys/{id}',
      scope: 'keys:manage',
      summary: 'Delete an API key; effective on the next request',
      successStatus: 204,
      params: idParams,
    },
  },
});
