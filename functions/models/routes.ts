import { listModelsQuery, modelPage } from '../../shared/models/model-schemas.ts';
import { defineRouteGroup } from '../../shared/platform/http/route.ts';
import { listVoicesQuery, voiceList } from '../../shared/models/voices.ts';
import { providerKeyBody, providerKeyList, providerKeyParams, providerKeyRecord } from '../../shared/models/provider-key-schemas.ts';

export const modelRoutes = defineRouteGroup({
  name: 'models',
  entry: 'functions/models/handler.ts',
  // Stores organizations' provider keys sealed; turns open them (docs/models.md#your-own-provider-keys).
  sealsSecrets: true,
  routes: {
    listModels: {
      method: 'GET',
      path: '/v1/chat/models',
      scope: 'models:read',
      summary: "List the model catalog as the organization sees it: the deployment's models, then the organization's own (`source`)",
      successStatus: 200,
      response: modelPage,
      query: listModelsQuery,
    },
    listVoices: {
      method: 'GET',
      path: '/v1/chat/voices',
      scope: 'voice:read',
      summary: 'The TTS voices catalog (provider, voice id, name, language, gender), filterable by provider and language',
      successStatus: 200,
      query: listVoicesQuery,
      response: voiceList,
    },
    listProviderKeys: {
      method: 'GET',
      path: '/v1/chat/provider-keys',
      scope: 'models:read',
      summary: "The organization's own provider keys (never the key: its last four characters)",
      successStatus: 200,
      response: providerKeyList,
    },
    putProviderKey: {
      method: 'PUT',
      path: '/v1/chat/provider-keys/{provider}',
      scope: 'models:write',
      summary: "Set the organization's own key for a provider (write-only; the models it names join the organization's catalog)",
      successStatus: 200,
      params: providerKeyParams,
      body: providerKeyBody,
      response: providerKeyRecord,
    },
    getProviderKey: {
      method: 'GET',
      path: '/v1/chat/provider-keys/{provider}',
      scope: 'models:read',
      summary: "The organization's key for a provider (never the key: its last four characters)",
      successStatus: 200,
      params: providerKeyParams,
      response: providerKeyRecord,
      errors: ['NOT_FOUND'],
    },
    deleteProviderKey: {
      method: 'DELETE',
      path: '/v1/chat/provider-keys/{provider}',
      scope: 'models:write',
      summary: "Remove the organization's key for a provider (its models leave the organization's catalog)",
      successStatus: 204,
      params: providerKeyParams,
      errors: ['NOT_FOUND'],
    },
  },
});
