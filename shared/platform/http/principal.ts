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
