/**
 * An organization's own provider keys (docs/models.md#your-own-provider-keys): stored sealed, shown only as a hint,
 * and, for LLM providers, the models they name added to the organization's catalog.
 */
import { NotFoundError, ValidationError, type FieldIssue } from '../platform/errors.ts';
import { describeLoopbackPorts, EgressBlockedError, egressPolicyFromConfig, staticEgressRefusal, type PortRanges } from '../platform/net/egress-guard.ts';
import type { Clock } from '../platform/clock.ts';
import { organizationModel, withOrganizationModels, type ModelCatalog } from './model-catalog.ts';
import type { Model } from './model-schemas.ts';
import type { ProviderKeyStore } from './ports.ts';
import { isLlmKeyProvider, type LlmKeyProvider, type ProviderConnection, type ProviderKey, type ProviderKeyInput, type ProviderKeyProvider } from './provider-key-schemas.ts';

export interface ProviderKeyDeps {
  providerKeys: ProviderKeyStore;
  clock: Clock;
  config: { LOOPBACK_EGRESS_PORTS: PortRanges; EGRESS_DENIED_PORTS: PortRanges };
}

/** What finds a model by id for an organization: the deployment's catalog, then the organization's own models. */
export interface OrganizationModelDeps {
  catalog: ModelCatalog;
  providerKeys: Pick<ProviderKeyStore, 'list'>;
}

export async function putProviderKey(deps: ProviderKeyDeps, orgId: string, provider: ProviderKeyProvider, input: ProviderKeyInput): Promise<ProviderKey> {
  const problems = fieldProblems(deps, provider, input);
  if (problems.length > 0) {
    throw new ValidationError(`Invalid request body: ${problems.map((problem) => `${problem.field} ${problem.message}`).join('; ')}`, { details: problems });
  }
  return deps.providerKeys.put(orgId, provider, input, deps.clock.now().toISOString());
}

export async function getProviderKey(deps: Pick<ProviderKeyDeps, 'providerKeys'>, orgId: string, provider: ProviderKeyProvider): Promise<ProviderKey> {
  const key = await deps.providerKeys.get(orgId, provider);
  if (!key) throw new NotFoundError(`No ${provider} key is set; PUT /v1/chat/provider-keys/${provider}.`);
  return key;
}

export async function listProviderKeys(deps: Pick<ProviderKeyDeps, 'providerKeys'>, orgId: string): Promise<{ data: ProviderKey[] }> {
  return { data: await deps.providerKeys.list(orgId) };
}

export async function deleteProviderKey(deps: Pick<ProviderKeyDeps, 'providerKeys'>, orgId: string, provider: ProviderKeyProvider): Promise<void> {
  if (!(await deps.providerKeys.delete(orgId, provider))) throw new NotFoundError(`No ${provider} key is set.`);
}

/** Which fields a provider takes: LLM providers name their models, `openai-compatible` its base URL; speech providers only a key. */
function fieldProblems(deps: ProviderKeyDeps, provider: ProviderKeyProvider, input: ProviderKeyInput): FieldIssue[] {
  if (!isLlmKeyProvider(provider)) {
    return (['baseUrl', 'models'] as const).filter((field) => input[field] !== undefined).map((field) => ({ field, message: `is not taken by ${provider}: only apiKey` }));
  }
  const problems: FieldIssue[] = [];
  if (!input.models) problems.push({ field: 'models', message: `is required: the ${provider} models this key may use` });
  if (provider === 'openai-compatible' && !input.baseUrl) problems.push({ field: 'baseUrl', message: 'is required for openai-compatible (e.g. https://api.openai.com/v1)' });
  const refusal = input.baseUrl ? staticEgressRefusal(new URL(input.baseUrl), egressPolicyFromConfig(deps.config)) : undefined;
  if (refusal instanceof EgressBlockedError) {
    const loopback = refusal.addressClass === 'loopback' ? ` (loopback only on the ports opened to it: ${describeLoopbackPorts(deps.config.LOOPBACK_EGRESS_PORTS)})` : '';
    problems.push({ field: 'baseUrl', message: `must not point at ${refusal.hostname}: model requests may not go there${loopback}` });
  }
  return problems;
}

/** The organization's own LLMs, from its keys of LLM providers. */
export function ownModels(orgId: string, keys: readonly ProviderKey[]): Model[] {
  return keys.flatMap(({ provider, models }) => (isLlmKeyProvider(provider) ? (models ?? []).map((name) => organizationModel(orgId, provider, name)) : []));
}

/** The catalog as the organization sees it: the deployment's models, then its own. */
export async function organizationCatalog(deps: OrganizationModelDeps, orgId: string): Promise<ModelCatalog> {
  return withOrganizationModels(deps.catalog, ownModels(orgId, await deps.providerKeys.list(orgId)));
}

/** One of the organization's own models by id, with its key opened; undefined when the organization has no such model (now). */
export async function ownModelConnection(
  deps: { providerKeys: Pick<ProviderKeyStore, 'list' | 'connection'> },
  orgId: string,
  modelId: string,
): Promise<{ model: Model; connection: ProviderConnection } | undefined> {
  const model = ownModels(orgId, await deps.providerKeys.list(orgId)).find((own) => own.id === modelId);
  if (!model) return undefined;
  // Own models come only from keys of LLM providers.
  const connection = await deps.providerKeys.connection(orgId, model.provider as LlmKeyProvider);
  // The key may have been replaced since the list, without this model.
  return connection?.models.includes(model.name) ? { model, connection } : undefined;
}

/**
 * The catalog to look these model ids up in: the deployment's when it holds them all (no read, the common case),
 * else the organization's.
 */
export async function catalogHolding(deps: OrganizationModelDeps, orgId: string, modelIds: readonly (string | undefined)[]): Promise<ModelCatalog> {
  return modelIds.every((id) => id === undefined || deps.catalog.byId(id)) ? deps.catalog : organizationCatalog(deps, orgId);
}

/** A model the organization may use, by id: the deployment's, else one of its own. */
export async function modelOfOrganization(deps: OrganizationModelDeps, orgId: string, modelId: string): Promise<Model | undefined> {
  return (await catalogHolding(deps, orgId, [modelId])).byId(modelId);
}
