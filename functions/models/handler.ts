import { listModels } from '../../shared/models/models.ts';
import { createHttpHandler } from '../../shared/platform/http/handler.ts';
import { runtime } from '../../shared/runtime.ts';
import { listVoices } from '../../shared/models/voices.ts';
import { modelRoutes } from './routes.ts';

export const handler = createHttpHandler(
  modelRoutes,
  {
    listModels: async ({ deps, query }) => listModels(deps.catalog, query),
    listVoices: async ({ query }) => listVoices(query),
  },
  runtime,
);
