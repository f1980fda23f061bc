import { UnauthorizedError } from '../platform/errors.ts';
import type { ApiKeyStore } from './ports.ts';
import type { Clock } from '../platform/clock.ts';
import { hashApiKey, hashesEqual } from './api-key-secret.ts';
import type { Authentication, Authenticator, Principal, RememberedKey } from '../platform/http/principal.ts';

export interface AuthDeps {
  apiKeys: ApiKeyStore;
  clock: Clock;
  verifyJwt: (token: string) => Promise<Principal>;
}

/** lastUsedAt is written at most once a minute per key and process, in parallel with the request itself. */
const lastUseWriteIntervalMs = 60_000;
const lastUseWrittenAt = new Map<string, number>();

/**
 * Which organization a key hash belongs to never changes, so it may be remembered; whether the key is still valid
 * may not, and is looked up on every request.
 */
const organizationOfKey = new Map<string, RememberedKey>();

const maxRememberedKeys = 10_000;

/**
 * The organization a request's API key belongs to, if this process has seen the key before: lets a route start
 * its reads while `authenticate` confirms the key. Not a credential check.
 */
function rememberedOrganization(headers: Readonly<Record<string, string | undefined>>): RememberedKey | undefined {
  const apiKey = headers['x-api-key']?.trim();
  return apiKey ? organizationOfKey.get(hashApiKey(apiKey)) : undefined;
}

/**
 * Resolves the caller from `x-api-key` or `Authorization: Bearer`. The key wins when both are sent, so a
 * server-side caller cannot be shadowed by a stray browser token.
 */
async function authenticate(deps: AuthDeps, headers: Readonly<Record<string, string | undefined>>): Promise<Authentication> {
  const apiKey = headers['x-api-key'];
  if (apiKey !== undefined) return authenticateApiKey(deps, apiKey.trim());
  const authorization = headers.authorization;
  if (authorization === undefined) throw new UnauthorizedError('Send an x-api-key header or an Authorization: Bearer token.');
  const bearer = /^Bearer\s+([A-Za-z0-9._~+/=-]+)\s*$/i.exec(authorization);
  if (!bearer) throw new UnauthorizedError('The Authorization header must be "Bearer <token>".');
  return { principal: await deps.verifyJwt(bearer[1] as string) };
}

async function authenticateApiKey(deps: AuthDeps, key: string): Promise<Authentication> {
  if (key.length < 16 || key.length > 256) throw new UnauthorizedError('Invalid API key.');
  const keyHash = hashApiKey(key);
  const identity = await deps.apiKeys.findByHash(keyHash);
  if (!identity || !hashesEqual(identity.keyHash, keyHash)) throw new UnauthorizedError('Invalid API key.');
  const principal: Principal = {
    orgId: identity.orgId,
    scopes: identity.scopes,
    ...(identity.rateLimit ? { rateLimit: identity.rateLimit } : {}),
    via: { kind: 'apiKey', keyId: identity.keyId },
  };
  if (!organizationOfKey.has(keyHash)) {
    if (organizationOfKey.size >= maxRememberedKeys) organizationOfKey.delete(organizationOfKey.keys().next().value as string);
    organizationOfKey.set(keyHash, { orgId: identity.orgId, keyId: identity.keyId, ...(identity.rateLimit ? { rateLimit: identity.rateLimit } : {}) });
  }
  const now = deps.clock.now();
  const last = lastUseWrittenAt.get(identity.keyId);
  if (last !== undefined && now.getTime() - last < lastUseWriteIntervalMs) return { principal };
  lastUseWrittenAt.set(identity.keyId, now.getTime());
  return { principal, pending: deps.apiKeys.recordUse(identity.orgId, identity.keyId, now.toISOString()) };
}

/** The pipeline's authenticator: API keys from the store (lastUsedAt written alongside), tokens by `verifyJwt`. */
export function createAuthenticator(deps: AuthDeps): Authenticator {
  return {
    authenticate: (headers) => authenticate(deps, headers),
    rememberedOrganization,
  };
}
