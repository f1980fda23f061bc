import type { ModelCatalog } from './model-catalog.ts';
import { paginate, type Page } from '../platform/schemas/common.ts';
import type { Model, ModelProvider, ModelSource, ModelType } from './model-schemas.ts';

export function listModels(
  catalog: ModelCatalog,
  query: { page: number; limit: number; type?: ModelType | undefined; provider?: ModelProvider | undefined; source?: ModelSource | undefined },
): Page<Model> {
  const matching = catalog.models.filter(
    (model) =>
      (!query.type || model.type === query.type) && (!query.provider || model.provider === query.provider) && (!query.source || model.source === query.source),
  );
  return paginate(matching, query.page, query.limit);
}
