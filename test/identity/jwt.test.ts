import { generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type ApiResponse, type TestApi } from '../support/api.ts';
import { startJwks, type TestJwks } from '../support/jwks.ts';

let jwks: TestJwks;
let api: TestApi;
beforeAll(async () => {
  jwks = await startJwks('https://issuer.test', 'agent-platform');
  api = await startApi({ JWT_JWKS_URL: jwks.url, JWT_ISSUER: 'https://issuer.test', JWT_AUDIENCE: 'agent-platform' });
});
afterAll(async () => {
  await api?.close();
  await jwks?.close();
});

const agentBody = { fullName: 'Token Agent', description: 'made with a JWT', role: 'You are helpful.' };

function expectUnauthorized(response: ApiResponse): void {
  expect(response.status).toBe(401);
  expect(response.body.error).toMatchObject({ code: 'UNAUTHORIZED', status: 401 });
  expect(response.text).not.toContain(' at ');
}

describe('a valid bearer token', () => {
  it('acts for the organization in its org_id claim with the scopes of its scope claim', async () => {
    // Prepare
    const orgId = crypto.randomUUID();
    const token = await jwks.sign({ org_id: orgId, scope: 'agents:read agents:write' });

    // Act
    const created = await api.request('POST', '/v2/chat/agents', { token, body: agentBody });
    const listed = await api.request('GET', '/v1/chat/agents', { token });

    // Assess
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ orgId, fullName: 'Token Agent' });
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((agent: { id: string }) => agent.id)).toEqual([created.body.id]);
  });

  it('shares the organization with API keys of the same org', async () => {
    // Prepare
    const orgId = crypto.randomUUID();
    const token = await jwks.sign({ org_id: orgId, scope: 'agents:read agents:write' });
    const created = await api.request('POST', '/v2/chat/agents', { token, body: agentBody });
    expect(created.status).toBe(201);
    const sameOrgKey = await api.newKey(orgId, ['*']);
    const otherOrg = await api.newOrg();

    // Act
    const viaKey = await api.request('GET', '/v1/chat/agents', { key: sameOrgKey });
    const viaOtherOrg = await api.request('GET', '/v1/chat/agents', { key: otherOrg.key });
    const single = await api.request('GET', `/v1/chat/agents/${created.body.id}`, { key: sameOrgKey });

    // Assess
    expect(viaKey.status).toBe(200);
    expect(viaKey.body.data.map((agent: { id: string }) => agent.id)).toEqual([created.body.id]);
    expect(single.status).toBe(200);
    expect(viaOtherOrg.body.data).toEqual([]);
  });

  it('reads scopes from a permissions array, and nothing beyond them', async () => {
    // Prepare
    const orgId = crypto.randomUUID();
    const token = await jwks.sign({ org_id: orgId, permissions: ['agents:read'] });

    // Act
    const listed = await api.request('GET', '/v1/chat/agents', { token });
    const created = await api.request('POST', '/v2/chat/agents', { token, body: agentBody });

    // Assess
    expect(listed.status).toBe(200);
    expect(listed.body.data).toEqual([]);
    expect(created.status).toBe(403);
    expect(created.body.error).toMatchObject({ code: 'FORBIDDEN', status: 403 });
  });

  it('grants nothing when the token carries no scopes', async () => {
    // Prepare
    const token = await jwks.sign({ org_id: crypto.randomUUID() });

    // Act
    const response = await api.request('GET', '/v1/chat/agents', { token });

    // Assess
    expect(response.status).toBe(403);
    expect(response.body.error.code).toBe('FORBIDDEN');
  });

  it('cannot be used to mint an API key with more scopes than the token holds', async () => {
    // Prepare
    const token = await jwks.sign({ org_id: crypto.randomUUID(), scope: 'keys:manage agents:read' });

    // Act
    const escalated = await api.request('POST', '/v1/chat/api-keys', { token, body: { name: 'x', scopes: ['agents:write'] } });
    const allowed = await api.request('POST', '/v1/chat/api-keys', { token, body: { name: 'y', scopes: ['agents:read'] } });

    // Assess
    expect(escalated.status).toBe(403);
    expect(allowed.status).toBe(201);
    expect((await api.request('GET', '/v1/chat/agents', { key: allowed.body.key })).status).toBe(200);
  });
});

describe('rejected bearer tokens', () => {
  const claims = () => ({ org_id: crypto.randomUUID(), scope: 'agents:read agents:write' });

  it('answers 401 to an expired token', async () => {
    // Prepare
    const token = await jwks.sign(claims(), { expiresIn: -120 });

    // Act
    const response = await api.request('GET', '/v1/chat/agents', { token });

    // Assess
    expectUnauthorized(response);
  });

  it('answers 401 to a token without an expiry', async () => {
    // Prepare
    const token = await jwks.sign({ org_id: crypto.randomUUID(), scope: 'agents:read' }, { expiresIn: null });

    // Act / Assess
    expectUnauthorized(await api.request('GET', '/v1/chat/agents', { token }));
  });

  it('answers 401 to a token from another issuer', async () => {
    // Prepare
    const token = await jwks.sign(claims(), { issuer: 'https://evil.test' });

    // Act
    const response = await api.request('GET', '/v1/chat/agents', { token });

    // Assess
    expectUnauthorized(response);
  });

  it('answers 401 to a token for another audience', async () => {
    // Prepare
    const token = await jwks.sign(claims(), { audience: 'some-other-api' });

    // Act
    const response = await api.request('GET', '/v1/chat/agents', { token });

    // Assess
    expectUnauthorized(response);
  });

  it('answers 401 to a token signed by a key the JWKS does not publish', async () => {
    // Prepare
    const { privateKey } = await generateKeyPair('RS256');
    const sameKid = await jwks.sign(claims(), { privateKey });
    const unknownKid = await jwks.sign(claims(), { privateKey, kid: 'not-published' });

    // Act
    const withSameKid = await api.request('GET', '/v1/chat/agents', { token: sameKid });
    const withUnknownKid = await api.request('GET', '/v1/chat/agents', { token: unknownKid });

    // Assess
    expectUnauthorized(withSameKid);
    expectUnauthorized(withUnknownKid);
  });

  it('answers 401 to an HS256 token', async () => {
    // Prepare
    const now = Math.floor(Date.now() / 1000);
    const token = await new SignJWT(claims())
      .setProtectedHeader({ alg: 'HS256', kid: jwks.kid })
      .setIssuer(jwks.issuer)
      .setAudience(jwks.audience)
      .setIssuedAt(now)
      .setExpirationTime(now + 300)
      .sign(new TextEncoder().encode('a shared secret that is long enough for HS256'));

    // Act
    const response = await api.request('GET', '/v1/chat/agents', { token });

    // Assess
    expectUnauthorized(response);
  });

  it('answers 401 to an unsigned (alg none) token', async () => {
    // Prepare
    const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const now = Math.floor(Date.now() / 1000);
    const token = `${encode({ alg: 'none', typ: 'JWT' })}.${encode({ ...claims(), iss: jwks.issuer, aud: jwks.audience, exp: now + 300 })}.`;

    // Act
    const response = await api.request('GET', '/v1/chat/agents', { token });

    // Assess
    expectUnauthorized(response);
  });

  it('answers 401 to a token without an org_id claim', async () => {
    // Prepare
    const withoutOrg = await jwks.sign({ scope: 'agents:read' });
    const emptyOrg = await jwks.sign({ org_id: '', scope: 'agents:read' });
    const numericOrg = await jwks.sign({ org_id: 42, scope: 'agents:read' });

    // Act
    const responses = await Promise.all(
      [withoutOrg, emptyOrg, numericOrg].map((token) => api.request('GET', '/v1/chat/agents', { token })),
    );

    // Assess
    for (const response of responses) expectUnauthorized(response);
  });

  it('answers 401 to a token whose payload was altered after signing', async () => {
    // Prepare
    const victimOrg = crypto.randomUUID();
    const victimKey = await api.newKey(victimOrg, ['*']);
    expect((await api.request('POST', '/v2/chat/agents', { key: victimKey, body: agentBody })).status).toBe(201);
    const token = await jwks.sign({ org_id: crypto.randomUUID(), scope: 'agents:read' });
    const [header, payload, signature] = token.split('.') as [string, string, string];
    const claimsOf = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    const forged = Buffer.from(JSON.stringify({ ...claimsOf, org_id: victimOrg, scope: '*' })).toString('base64url');
    const tampered = `${header}.${forged}.${signature}`;

    // Act
    const response = await api.request('GET', '/v1/chat/agents', { token: tampered });

    // Assess
    expectUnauthorized(response);
    expect(response.text).not.toContain(victimOrg);
  });

  it('answers 401 to a token whose times are absurd: exp=1e300, a lifetime over JWT_MAX_LIFETIME_SECONDS (24 h), fractional times, issued in the future', async () => {
    // Prepare
    const now = Math.floor(Date.now() / 1000);
    const day = 24 * 3600;
    const absurd = {
      'exp=1e300 without iat': { exp: 1e300, iat: null },
      'exp=1e300 with iat': { exp: 1e300 },
      'exp 25 h away without iat': { exp: now + day + 3600, iat: null },
      'exp 25 h after iat': { iat: now - 3600, exp: now - 3600 + day + 3600 },
      'fractional exp': { exp: now + 300.5 },
      'fractional iat': { iat: now - 10.25 },
      'fractional nbf': { nbf: now - 10.5 },
      'iat an hour ahead': { iat: now + 3600, exp: now + 7200 },
    };
    const tokens = await Promise.all(Object.entries(absurd).map(async ([name, times]) => [name, await jwks.sign(claims(), { times })] as const));
    const longestAllowed = await jwks.sign(claims(), { times: { iat: now - 60, exp: now - 60 + day } });

    // Act
    const responses = await Promise.all(tokens.map(async ([name, token]) => [name, await api.request('GET', '/v1/chat/agents', { token })] as const));
    const allowed = await api.request('GET', '/v1/chat/agents', { token: longestAllowed });

    // Assess
    for (const [name, response] of responses) {
      expect(response.status, name).toBe(401);
      expectUnauthorized(response);
    }
    expect(allowed.status, allowed.text).toBe(200);
  });

  it('answers 401 to a token that is not a JWT at all', async () => {
    // Act
    const response = await api.request('GET', '/v1/chat/agents', { token: 'not-a-jwt' });

    // Assess
    expectUnauthorized(response);
  });
});
