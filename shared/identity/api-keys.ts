import { displayPrefix, generateApiKey, hashApiKey } from './api-key-secret.ts';
import type { Principal } from '../platform/http/principal.ts';
import { grants, isScope } from '../platform/http/scopes.ts';
import { NotFoundError, ScopeEscalationError } from '../platform/errors.ts';
import type { ApiKeyStore, OrgStore } from './ports.ts';
import type { SealResponse } from '../platform/ports.ts';
import type { ApiKey, CreateApiKeyInput } from './api-key-schemas.ts';
import { compareBy, paginate, type Page } from '../platform/schemas/common.ts';
import { newId, type Clock } from '../platform/clock.ts';

export interface ApiKeyDeps {
  apiKeys: ApiKeyStore;
  clock: Clock;
}

export type CreatedApiKey = ApiKey & { key: string };

/** Creates a key holding at most the scopes of its creator. The plain key is returned here and never again. */
export async function createApiKey(deps: ApiKeyDeps, creator: Principal, input: CreateApiKeyInput, sealResponse?: SealResponse): Promise<CreatedApiKey> {
  const beyondCreator = input.scopes.filter((scope) => !(isScope(scope) && grants(creator.scopes, scope)));
  if (beyondCreator.length > 0) {
    throw new ScopeEscalationError(`A key cannot grant scopes its creator lacks: ${beyondCreator.join(', ')}.`, {
      details: beyondCreator.map((scope) => ({ field: 'scopes', message: `${scope} is not held by the caller` })),
    });
  }
  return issueApiKey(deps, creator.orgId, input, generateApiKey(), sealResponse);
}

/** Issues a key for an organization without a creator's scopes to check: for operators (the keys CLI, start-up). */
export async function issueApiKey(
  deps: ApiKeyDeps,
  orgId: string,
  input: CreateApiKeyInput,
  key = generateApiKey(),
  sealResponse?: SealResponse,
): Promise<CreatedApiKey> {
  const record: ApiKey = {
    id: newId(),
    orgId,
    name: input.name,
    scopes: input.scopes,
    ...(input.rateLimit ? { rateLimit: input.rateLimit } : {}),
    prefix: displayPrefix(key),
    createdAt: deps.clock.now().toISOString(),
  };
  const created: CreatedApiKey = { ...record, key };
  if (!(await deps.apiKeys.create(record, hashApiKey(key), sealResponse?.(created)))) {
    throw new Error('That key is already registered.');
  }
  return created;
}

export async function listApiKeys(
  deps: Pick<ApiKeyDeps, 'apiKeys'>,
  orgId: string,
  query: { page: number; limit: number; sort: { field: 'createdAt' | 'name' | 'lastUsedAt'; direction: 'asc' | 'desc' } },
): Promise<Page<ApiKey>> {
  const all = await deps.apiKeys.list(orgId);
  all.sort(compareBy<ApiKey>(query.sort.field, query.sort.direction));
  return paginate(all, query.page, query.limit);
}

export async function deleteApiKey(deps: Pick<ApiKeyDeps, 'apiKeys'>, orgId: string, keyId: string): Promise<void> {
  if (!(await deps.apiKeys.delete(orgId, keyId))) throw new NotFoundError(`API key ${keyId} not found.`);
}

/**
 * Makes sure an organization exists and that `key` is a full-access key of it; safe to repeat. Used by the
 * headless start (INIT_ORG_ID, INIT_API_KEY).
 */
export async function ensureOrgWithKey(
  deps: ApiKeyDeps & { orgs: OrgStore },
  orgId: string,
  key: string,
): Promise<{ created: boolean }> {
  await deps.orgs.ensure({ id: orgId, name: orgId, createdAt: deps.clock.now().toISOString() });
  const existing = await deps.apiKeys.findByHash(hashApiKey(key));
  if (existing) {
    if (existing.orgId !== orgId) throw new Error(`INIT_API_KEY already belongs to organization ${existing.orgId}.`);
    return { created: false };
  }
  await issueApiKey(deps, orgId, { name: 'init', scopes: ['*'] }, key);
  return { created: true };
}
