import { listModelsQuery, modelPage } from '../../shared/models/model-schemas.ts';
import { defineRouteGroup } from '../../shared/platform/http/route.ts';
import { listVoicesQuery, voiceList } from '../../shared/models/voices.ts';

export const modelRoutes = defineRouteGroup({
  name: 'models',
  entry: 'functions/models/handler.ts',
  routes: {
    listModels: {
      method: 'GET',
      path: '/v1/chat/models',
      scope: 'models:read',
      summary: 'List the model catalog (LLM, STT, TTS)',
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
  },
});
