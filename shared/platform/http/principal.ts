/** Who is calling: always one organization, with the scopes its key or token holds. */
export interface Principal {
  orgId: string;
  scopes: string[];
  /** The API key's own rate limit, when it was created with one. */
  rateLimit?: { requestsPerSecond: number; burst: number } | undefined;
  /** `apiKey` with the key's id, or `jwt` with the token's subject. */
  via: { kind: 'apiKey'; keyId: string } | { kind: 'jwt'; subject: string | undefined };
}

/** Organization ids become part of every key, so they are restricted to characters that cannot forge one. */
export const orgIdPattern = /^[A-Za-z0-9._-]{1,128}$/;

/** A request's caller, resolved from its credential; `pending` is bookkeeping to await before the invocation ends. */
export interface Authentication {
  principal: Principal;
  pending?: Promise<void> | undefined;
}

/** What never changes about a key: its organization, its id and its own rate limit. */
export interface RememberedKey {
  orgId: string;
  keyId: string;
  rateLimit?: Principal['rateLimit'];
}

/**
 * How the HTTP pipeline learns who calls. The pipeline knows no credential; the identity context supplies this and
 * the runtime hands it over with the other dependencies.
 */
export interface Authenticator {
  /** Resolves the caller from the request's headers, or rejects with UnauthorizedError. */
  authenticate(headers: Readonly<Record<string, string | undefined>>): Promise<Authentication>;
  /** The organization of a credential this process has confirmed before, so reads may start while it is confirmed again. Not a credential check. */
  rememberedOrganization(headers: Readonly<Record<string, string | undefined>>): RememberedKey | undefined;
}
