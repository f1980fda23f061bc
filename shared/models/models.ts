import type { ModelCatalog } from './model-catalog.ts';
import { paginate, type Page } from '../platform/schemas/common.ts';
import type { Model, ModelProvider, ModelType } from './model-schemas.ts';

export function listModels(
  catalog: ModelCatalog,
  query: { page: number; limit: number; type?: ModelType | undefined; provider?: ModelProvider | undefined },
): Page<Model> {
  const matching = catalog.models.filter(
    (model) => (!query.type || model.type === query.type) && (!query.provider || model.provider === query.provider),
  );
  return paginate(matching, query.page, query.limit);
}
