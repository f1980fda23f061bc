import { createServer } from 'node:http';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWTPayload } from 'jose';
import { closeServer, listenOnLoopback } from './loopback-server.ts';

export interface SignOptions {
  issuer?: string;
  audience?: string;
  /** Seconds from now; negative for a token that has already expired; null for a token without `exp`. */
  expiresIn?: number | null;
  /** Sign with this key instead of the one the JWKS publishes. */
  privateKey?: CryptoKey;
  kid?: string;
  /** `exp`, `nbf`, `iat` written exactly as given (absurd values too) instead of the ones `expiresIn` derives; `iat: null` leaves it out. */
  times?: { exp?: number; nbf?: number; iat?: number | null };
}

export interface TestJwks {
  /** Where the published key set is served. */
  url: string;
  issuer: string;
  audience: string;
  kid: string;
  /** An RS256 token signed with the published key; claims and options override the defaults. */
  sign(claims: JWTPayload, options?: SignOptions): Promise<string>;
  close(): Promise<void>;
}

/** An identity provider in miniature: one RS256 key pair, its public half served as a JWKS over loopback HTTP. */
export async function startJwks(issuer = 'https://issuer.test', audience = 'agent-platform'): Promise<TestJwks> {
  const kid = `test-${crypto.randomUUID()}`;
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' };
  const server = createServer((request, response) => {
    response.setHeader('content-type', 'application/json');
    response.end(JSON.stringify({ keys: [publicJwk] }));
  });
  const url = `http://127.0.0.1:${await listenOnLoopback(server)}/.well-known/jwks.json`;

  return {
    url,
    issuer,
    audience,
    kid,
    async sign(claims, options = {}) {
      const now = Math.floor(Date.now() / 1000);
      const expiresIn = options.expiresIn === undefined ? 300 : options.expiresIn;
      const { iat = now + Math.min(-5, (expiresIn ?? 300) - 60), ...times } = { ...(expiresIn === null ? {} : { exp: now + expiresIn }), ...options.times };
      const token = new SignJWT({ ...claims, ...times, ...(iat === null ? {} : { iat }) })
        .setProtectedHeader({ alg: 'RS256', kid: options.kid ?? kid, typ: 'JWT' })
        .setIssuer(options.issuer ?? issuer)
        .setAudience(options.audience ?? audience)
        .setSubject('user-1');
      return token.sign(options.privateKey ?? privateKey);
    },
    close: () => closeServer(server),
  };
}
