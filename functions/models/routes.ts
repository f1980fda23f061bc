import { listModelsQuery, modelPage } from '../../shared/schemas/model.ts';
import { defineRouteGroup } from '../../shared/http/route.ts';

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
  },
});
