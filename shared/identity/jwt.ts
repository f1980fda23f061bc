import type { JWTPayload } from 'jose';
import type { Config } from '../platform/config.ts';
import { UnauthorizedError, UpstreamUnavailableError } from '../platform/errors.ts';
import { orgIdPattern, type Principal } from '../platform/http/principal.ts';

type JwtConfig = Pick<
  Config,
  'JWT_JWKS_URL' | 'JWT_ISSUER' | 'JWT_AUDIENCE' | 'JWT_ORG_CLAIM' | 'JWT_ALGORITHMS' | 'JWT_CLOCK_TOLERANCE_SECONDS' | 'JWT_MAX_LIFETIME_SECONDS'
>;

/**
 * Builds a verifier whose JWKS is fetched lazily and cached by jose across requests of one process. jose itself is
 * imported with the first Bearer token: API keys never need it.
 */
export function createJwtVerifier(config: JwtConfig): (token: string) => Promise<Principal> {
  const jwksUrl = config.JWT_JWKS_URL;
  if (!jwksUrl) {
    return async () => {
      throw new UnauthorizedError('Bearer tokens are not accepted by this deployment.');
    };
  }
  let loading: Promise<{ jose: typeof import('jose'); keySet: ReturnType<(typeof import('jose'))['createRemoteJWKSet']> }> | undefined;
  const verifier = () => (loading ??= import('jose').then((jose) => ({ jose, keySet: jose.createRemoteJWKSet(new URL(jwksUrl)) })));
  return async (token) => {
    const { jose, keySet } = await verifier();
    let payload: JWTPayload;
    try {
      ({ payload } = await jose.jwtVerify(token, keySet, {
        algorithms: config.JWT_ALGORITHMS,
        clockTolerance: config.JWT_CLOCK_TOLERANCE_SECONDS,
        // A token without an expiry would be good forever once leaked.
        requiredClaims: ['exp'],
        ...(config.JWT_ISSUER ? { issuer: config.JWT_ISSUER } : {}),
        ...(config.JWT_AUDIENCE ? { audience: config.JWT_AUDIENCE } : {}),
      }));
    } catch (error) {
      if (error instanceof jose.errors.JOSEError) throw new UnauthorizedError('Invalid or expired token.', { cause: error });
      // jose lets network failures through: the token may be fine, the identity provider is not reachable.
      throw new UpstreamUnavailableError('The identity provider signing keys could not be fetched; retry.', { cause: error });
    }
    const implausible = implausibleTimeClaim(payload, Math.floor(Date.now() / 1000), config);
    if (implausible) throw new UnauthorizedError('Invalid or expired token.', { cause: new Error(implausible) });
    const orgId = payload[config.JWT_ORG_CLAIM];
    if (typeof orgId !== 'string' || !orgIdPattern.test(orgId)) {
      throw new UnauthorizedError(`Token has no valid "${config.JWT_ORG_CLAIM}" claim.`);
    }
    return { orgId, scopes: scopesOf(payload), via: { kind: 'jwt', subject: payload.sub } };
  };
}

/**
 * What jose lets through but no identity provider issues: `exp`, `nbf` or `iat` that is not a whole number of
 * seconds, a token that lives longer than JWT_MAX_LIFETIME_SECONDS (from `iat`, or from now: `exp=1e300` would be
 * good forever once leaked), or one issued in the future. Undefined when the times are plausible.
 */
function implausibleTimeClaim(payload: JWTPayload, now: number, config: JwtConfig): string | undefined {
  for (const claim of ['exp', 'nbf', 'iat'] as const) {
    if (payload[claim] !== undefined && !Number.isSafeInteger(payload[claim])) return `"${claim}" is not a whole number of seconds`;
  }
  const { exp, iat } = payload as { exp: number; iat?: number };
  const tolerance = config.JWT_CLOCK_TOLERANCE_SECONDS;
  if (exp - now > config.JWT_MAX_LIFETIME_SECONDS + tolerance) return '"exp" is further away than the longest token lifetime';
  if (iat !== undefined && iat > now + tolerance) return '"iat" is in the future';
  if (iat !== undefined && exp - iat > config.JWT_MAX_LIFETIME_SECONDS) return '"exp" - "iat" is longer than the longest token lifetime';
  return undefined;
}

function scopesOf(payload: JWTPayload): string[] {
  if (typeof payload.scope === 'string') return payload.scope.split(' ').filter(Boolean);
  if (Array.isArray(payload.permissions)) return payload.permissions.filter((item) => typeof item === 'string');
  return [];
}
