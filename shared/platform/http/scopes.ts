/**
 * Every scope a key or token can hold. `<area>:write` implies `<area>:read`; `*` holds them all.
 * docs/auth.md has the table of which route needs which scope.
 */
export const scopes = [
  '*',
  'agents:read',
  'agents:write',
  'tools:read',
  'tools:write',
  'models:read',
  'models:write',
  'chat:read',
  'chat:write',
  'voice:read',
  'voice:write',
  'channels:read',
  'channels:write',
  'webhooks:read',
  'webhooks:write',
  'knowledge:read',
  'knowledge:write',
  'contacts:read',
  'contacts:write',
  'campaigns:read',
  'campaigns:write',
  'analytics:read',
  'usage:read',
  'billing:read',
  'billing:write',
  'keys:manage',
] as const;

export type Scope = (typeof scopes)[number];

const knownScopes: ReadonlySet<string> = new Set(scopes);

export function isScope(value: string): value is Scope {
  return knownScopes.has(value);
}

/** Whether a holder of `held` may do what `required` guards. */
export function grants(held: readonly string[], required: Scope): boolean {
  if (held.includes('*') || held.includes(required)) return true;
  if (required.endsWith(':read')) return held.includes(required.replace(/:read$/, ':write'));
  return false;
}
