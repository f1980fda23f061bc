import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertDeliverableUrl } from '../../shared/webhooks/webhooks.ts';
import type { Resolver } from '../../shared/platform/net/egress-guard.ts';
import type { WebhookStore } from '../../shared/webhooks/ports.ts';
import { expectError, startApi, type TestApi } from '../support/api.ts';

let api: TestApi;
let store: WebhookStore;
beforeAll(async () => {
  api = await startApi();
  store = (await import('../../shared/runtime.ts')).runtime().webhooks;
});
afterAll(() => api.close());

const rfc3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const whsec = /^whsec_[A-Za-z0-9+/]{43}=$/;
const unknownId = '00000000-0000-4000-8000-000000000000';
const dayMs = 24 * 60 * 60 * 1000;

/** A public IP literal: registration classifies it without DNS, and nothing is ever sent to it. */
const publicUrl = 'https://1.1.1.1/hooks/agent-platform';

function validWebhook(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { url: publicUrl, events: ['session.created', 'session.ended'], description: 'CRM sync', ...overrides };
}

async function createWebhook(key: string, overrides: Record<string, unknown> = {}): Promise<any> {
  const response = await api.request('POST', '/v1/chat/webhooks', { key, body: validWebhook(overrides) });
  expect(response.status, response.text).toBe(201);
  return response.body;
}

async function webhookTotal(key: string): Promise<number> {
  const response = await api.request('GET', '/v1/chat/webhooks', { key });
  expect(response.status).toBe(200);
  return response.body.pagination.total;
}

describe('POST /v1/chat/webhooks', () => {
  it('registers an endpoint and shows its signing secret in this response only', async () => {
    // Prepare
    const { orgId, key } = await api.newOrg();
    const body = validWebhook();

    // Act
    const response = await api.request('POST', '/v1/chat/webhooks', { key, body });

    // Assess
    expect(response.status).toBe(201);
    expect(response.body).toEqual({
      id: expect.stringMatching(uuid),
      orgId,
      url: publicUrl,
      events: ['session.created', 'session.ended'],
      description: 'CRM sync',
      enabled: true,
      createdAt: expect.stringMatching(rfc3339),
      updatedAt: response.body.createdAt,
      secret: expect.stringMatching(whsec),
    });
    const { secret, ...record } = response.body;
    const stored = await api.request('GET', `/v1/chat/webhooks/${record.id}`, { key });
    expect(stored.status).toBe(200);
    expect(stored.body).toEqual(record);
    expect(stored.text).not.toContain(secret.slice('whsec_'.length, 20));
    const list = await api.request('GET', '/v1/chat/webhooks', { key });
    expect(list.body.data).toEqual([record]);
    expect(list.text).not.toContain(secret.slice('whsec_'.length, 20));
    expect(list.text).not.toMatch(/whsec_|previousSecret/);
  });

  it('gives every endpoint its own secret', async () => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const first = await createWebhook(key);
    const second = await createWebhook(key);

    // Assess
    expect(first.secret).not.toBe(second.secret);
  });

  it('stores a disabled endpoint without a description', async () => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const created = await createWebhook(key, { description: undefined, enabled: false });

    // Assess
    expect(created.enabled).toBe(false);
    expect(created).not.toHaveProperty('description');
    expect((await api.request('GET', `/v1/chat/webhooks/${created.id}`, { key })).body).not.toHaveProperty('description');
  });

  it('accepts ["*"] and removes duplicate event types, keeping their order', async () => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const all = await createWebhook(key, { events: ['*'] });
    const deduplicated = await createWebhook(key, { events: ['session.ended', 'message.added', 'session.ended', 'message.added'] });
    const repeatedStar = await createWebhook(key, { events: ['*', '*'] });

    // Assess
    expect(all.events).toEqual(['*']);
    expect(deduplicated.events).toEqual(['session.ended', 'message.added']);
    expect(repeatedStar.events).toEqual(['*']);
  });

  it.each([
    'http://127.0.0.1:8080/hooks',
    'http://127.9.8.7:8081/hooks',
    'http://localhost:3000/hooks',
    'http://[::1]:9000/hooks',
    'https://localhost:8443/hooks',
  ])('accepts the loopback URL %s where loopback egress is opened to its port', async (url) => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const created = await createWebhook(key, { url });

    // Assess
    expect(created.url).toBe(url);
  });

  it.each([
    ['http on a public host', 'http://1.1.1.1/hooks'],
    ['http on a private host', 'http://10.0.0.1/hooks'],
    ['ftp', 'ftp://files.example.com/hooks'],
    ['a relative URL', '/hooks'],
    ['not a URL', 'hooks please'],
    ['a URL over 2048 characters', `https://1.1.1.1/${'a'.repeat(2040)}`],
    ['a number', 42],
  ])('rejects %s with 400 naming url', async (_case, url) => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('POST', '/v1/chat/webhooks', { key, body: validWebhook({ url }) });

    // Assess
    expectError(response, 400, 'VALIDATION_ERROR', 'url');
    expect(await webhookTotal(key)).toBe(0);
  });

  it.each([
    ['an unknown event type', ['session.created', 'session.exploded'], 'events.1'],
    ['no event type', [], 'events'],
    ['"*" with other types', ['*', 'session.created'], 'events'],
    ['a non-string event type', [7], 'events.0'],
    ['events that are not a list', 'session.created', 'events'],
    ['missing events', undefined, 'events'],
  ])('rejects %s with 400', async (_case, events, field) => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('POST', '/v1/chat/webhooks', { key, body: validWebhook({ events }) });

    // Assess
    expectError(response, 400, 'VALIDATION_ERROR', field);
    expect(await webhookTotal(key)).toBe(0);
  });

  it.each([
    ['a description over 500 characters', { description: 'x'.repeat(501) }, 'description'],
    ['a non-boolean enabled', { enabled: 'yes' }, 'enabled'],
    ['an unknown field', { secret: 'whsec_mine' }, 'body'],
    ['a missing url', { url: undefined }, 'url'],
  ])('rejects %s with 400', async (_case, overrides, field) => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('POST', '/v1/chat/webhooks', { key, body: validWebhook(overrides) });

    // Assess
    expectError(response, 400, 'VALIDATION_ERROR', field);
  });

  it.each([
    ['a private address', 'https://10.0.0.1/hooks'],
    ['the cloud metadata address', 'https://169.254.169.254/latest/meta-data/'],
    ['a link-local address', 'https://169.254.10.10/hooks'],
    ['the IPv6 metadata address', 'https://[fd00:ec2::254]/hooks'],
    ['an IPv4-mapped private address', 'https://[::ffff:192.168.1.1]/hooks'],
    ['the unspecified address', 'https://0.0.0.0/hooks'],
    ['a host that does not resolve', 'https://no-such-host.invalid/hooks'],
  ])('refuses %s with 422 WEBHOOK_URL_NOT_ALLOWED and stores nothing', async (_case, url) => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('POST', '/v1/chat/webhooks', { key, body: validWebhook({ url }) });

    // Assess
    expectError(response, 422, 'WEBHOOK_URL_NOT_ALLOWED', 'url');
    expect(await webhookTotal(key)).toBe(0);
  });

  it('replays the same response, secret included, for a repeated Idempotency-Key', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const headers = { 'idempotency-key': `webhook-${crypto.randomUUID()}` };
    const first = await api.request('POST', '/v1/chat/webhooks', { key, body: validWebhook(), headers });

    // Act
    const replay = await api.request('POST', '/v1/chat/webhooks', { key, body: validWebhook(), headers });

    // Assess
    expect(first.status).toBe(201);
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual(first.body);
    expect(await webhookTotal(key)).toBe(1);
  });
});

describe('GET /v1/chat/webhooks', () => {
  it('pages, sorts and filters on enabled', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const c = await createWebhook(key, { url: 'https://1.1.1.3/hooks' });
    const a = await createWebhook(key, { url: 'https://1.1.1.1/hooks', enabled: false });
    const b = await createWebhook(key, { url: 'https://1.1.1.2/hooks' });

    // Act
    const newestFirst = await api.request('GET', '/v1/chat/webhooks', { key });
    const byUrl = await api.request('GET', '/v1/chat/webhooks?sort=url:asc&limit=2&page=1', { key });
    const byUrlPage2 = await api.request('GET', '/v1/chat/webhooks?sort=url:asc&limit=2&page=2', { key });
    const enabled = await api.request('GET', '/v1/chat/webhooks?enabled=true&sort=createdAt:asc', { key });
    const disabled = await api.request('GET', '/v1/chat/webhooks?enabled=false', { key });

    // Assess
    expect(newestFirst.body.data.map((endpoint: any) => endpoint.id)).toEqual([b.id, a.id, c.id]);
    expect(byUrl.body.data.map((endpoint: any) => endpoint.id)).toEqual([a.id, b.id]);
    expect(byUrl.body.pagination).toEqual({ page: 1, limit: 2, total: 3, totalPages: 2 });
    expect(byUrlPage2.body.data.map((endpoint: any) => endpoint.id)).toEqual([c.id]);
    expect(enabled.body.data.map((endpoint: any) => endpoint.id)).toEqual([c.id, b.id]);
    expect(disabled.body.data.map((endpoint: any) => endpoint.id)).toEqual([a.id]);
    expect(newestFirst.text).not.toMatch(/whsec_|secret/i);
  });

  it.each([
    ['an unknown sort field', 'sort=secret:asc', 'sort'],
    ['a non-boolean enabled filter', 'enabled=yes', 'enabled'],
  ])('rejects %s with 400', async (_case, query, field) => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('GET', `/v1/chat/webhooks?${query}`, { key });

    // Assess
    expectError(response, 400, 'VALIDATION_ERROR', field);
  });

  it('answers an empty organization with an empty page', async () => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('GET', '/v1/chat/webhooks', { key });

    // Assess
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ data: [], pagination: { page: 1, limit: 10, total: 0, totalPages: 0 } });
  });
});

describe('GET /v1/chat/webhooks/{id}', () => {
  it.each([
    ['an unknown id', unknownId],
    ['a malformed id', 'not-a-uuid'],
  ])('answers %s with 404', async (_case, id) => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('GET', `/v1/chat/webhooks/${id}`, { key });

    // Assess
    expectError(response, 404, 'NOT_FOUND');
  });
});

describe('PATCH /v1/chat/webhooks/{id}', () => {
  it('changes url, events, description and enabled, and keeps the signing secret', async () => {
    // Prepare
    const { orgId, key } = await api.newOrg();
    const created = await createWebhook(key);

    // Act
    const response = await api.request('PATCH', `/v1/chat/webhooks/${created.id}`, {
      key,
      body: { url: 'http://127.0.0.1:4010/new', events: ['message.added', 'message.added'], description: '  Renamed  ', enabled: false },
    });

    // Assess
    expect(response.status, response.text).toBe(200);
    const { secret, ...record } = created;
    expect(response.body).toEqual({
      ...record,
      url: 'http://127.0.0.1:4010/new',
      events: ['message.added'],
      description: 'Renamed',
      enabled: false,
      updatedAt: expect.stringMatching(rfc3339),
    });
    expect(Date.parse(response.body.updatedAt)).toBeGreaterThan(Date.parse(created.updatedAt));
    expect(response.text).not.toContain('whsec_');
    expect((await api.request('GET', `/v1/chat/webhooks/${created.id}`, { key })).body).toEqual(response.body);
    expect((await store.deliverable(orgId, created.id, Date.now()))?.secrets).toEqual([secret]);
  });

  it('leaves absent fields alone and clears the description with null', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const created = await createWebhook(key);

    // Act
    const response = await api.request('PATCH', `/v1/chat/webhooks/${created.id}`, { key, body: { description: null } });

    // Assess
    expect(response.status).toBe(200);
    expect(response.body).not.toHaveProperty('description');
    expect(response.body).toMatchObject({ url: created.url, events: created.events, enabled: true });
    expect((await api.request('GET', `/v1/chat/webhooks/${created.id}`, { key })).body).not.toHaveProperty('description');
  });

  it.each([
    ['an empty body', {}, 400, 'VALIDATION_ERROR', 'body'],
    ['http on a public host', { url: 'http://1.1.1.1/hooks' }, 400, 'VALIDATION_ERROR', 'url'],
    ['an ftp URL', { url: 'ftp://1.1.1.1/hooks' }, 400, 'VALIDATION_ERROR', 'url'],
    ['an unknown event type', { events: ['nope'] }, 400, 'VALIDATION_ERROR', 'events.0'],
    ['no event type', { events: [] }, 400, 'VALIDATION_ERROR', 'events'],
    ['null events', { events: null }, 400, 'VALIDATION_ERROR', 'events'],
    ['null enabled', { enabled: null }, 400, 'VALIDATION_ERROR', 'enabled'],
    ['an unknown field', { secret: 'whsec_x' }, 400, 'VALIDATION_ERROR', 'body'],
    ['a metadata address', { url: 'https://169.254.169.254/' }, 422, 'WEBHOOK_URL_NOT_ALLOWED', 'url'],
    ['a private address', { url: 'https://10.0.0.1/hooks' }, 422, 'WEBHOOK_URL_NOT_ALLOWED', 'url'],
  ])('rejects %s and changes nothing', async (_case, body, status, code, field) => {
    // Prepare
    const { key } = await api.newOrg();
    const { secret: _secret, ...created } = await createWebhook(key);

    // Act
    const response = await api.request('PATCH', `/v1/chat/webhooks/${created.id}`, { key, body });

    // Assess
    expectError(response, status, code, field);
    expect((await api.request('GET', `/v1/chat/webhooks/${created.id}`, { key })).body).toEqual(created);
  });

  it('answers an unknown id with 404', async () => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('PATCH', `/v1/chat/webhooks/${unknownId}`, { key, body: { enabled: false } });

    // Assess
    expectError(response, 404, 'NOT_FOUND');
  });
});

describe('DELETE /v1/chat/webhooks/{id}', () => {
  it('deletes the endpoint; a second delete is 404', async () => {
    // Prepare
    const { orgId, key } = await api.newOrg();
    const created = await createWebhook(key);
    const kept = await createWebhook(key);

    // Act
    const response = await api.request('DELETE', `/v1/chat/webhooks/${created.id}`, { key });

    // Assess
    expect(response.status).toBe(204);
    expect(response.text).toBe('');
    expectError(await api.request('GET', `/v1/chat/webhooks/${created.id}`, { key }), 404, 'NOT_FOUND');
    expectError(await api.request('DELETE', `/v1/chat/webhooks/${created.id}`, { key }), 404, 'NOT_FOUND');
    expect((await api.request('GET', '/v1/chat/webhooks', { key })).body.data.map((endpoint: any) => endpoint.id)).toEqual([kept.id]);
    expect(await store.deliverable(orgId, created.id, Date.now())).toBeUndefined();
  });
});

describe('POST /v1/chat/webhooks/{id}/rotate-secret', () => {
  it('returns a new secret, keeps the previous one valid for 24 hours and never shows either again', async () => {
    // Prepare
    const { orgId, key } = await api.newOrg();
    const created = await createWebhook(key);
    const before = Date.now();

    // Act
    const response = await api.request('POST', `/v1/chat/webhooks/${created.id}/rotate-secret`, { key });

    // Assess
    expect(response.status, response.text).toBe(200);
    expect(response.body).toEqual({ id: created.id, secret: expect.stringMatching(whsec), previousSecretValidUntil: expect.stringMatching(rfc3339) });
    expect(response.body.secret).not.toBe(created.secret);
    const validUntil = Date.parse(response.body.previousSecretValidUntil);
    expect(validUntil).toBeGreaterThanOrEqual(before + dayMs);
    expect(validUntil).toBeLessThanOrEqual(Date.now() + dayMs);
    const stored = await api.request('GET', `/v1/chat/webhooks/${created.id}`, { key });
    const { secret: _secret, ...record } = created;
    expect(stored.body).toEqual(record);
    const list = await api.request('GET', '/v1/chat/webhooks', { key });
    for (const text of [stored.text, list.text]) {
      expect(text).not.toContain(created.secret.slice(6, 26));
      expect(text).not.toContain(response.body.secret.slice(6, 26));
      expect(text).not.toMatch(/whsec_|previousSecret/);
    }
    expect((await store.deliverable(orgId, created.id, Date.now()))?.secrets).toEqual([response.body.secret, created.secret]);
  });

  it('keeps at most two secrets: a second rotation drops the oldest', async () => {
    // Prepare
    const { orgId, key } = await api.newOrg();
    const created = await createWebhook(key);
    const first = await api.request('POST', `/v1/chat/webhooks/${created.id}/rotate-secret`, { key });

    // Act
    const second = await api.request('POST', `/v1/chat/webhooks/${created.id}/rotate-secret`, { key });

    // Assess
    expect(second.status).toBe(200);
    expect((await store.deliverable(orgId, created.id, Date.now()))?.secrets).toEqual([second.body.secret, first.body.secret]);
  });

  it.each([
    ['an unknown id', unknownId],
    ['a malformed id', 'nope'],
  ])('answers %s with 404', async (_case, id) => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('POST', `/v1/chat/webhooks/${id}/rotate-secret`, { key });

    // Assess
    expectError(response, 404, 'NOT_FOUND');
  });
});

describe('organization isolation', () => {
  it('never shows, changes, rotates or deletes another organization’s endpoint', async () => {
    // Prepare
    const owner = await api.newOrg();
    const other = await api.newOrg();
    const { secret, ...endpoint } = await createWebhook(owner.key);
    const own = await createWebhook(other.key, { url: 'https://1.1.1.2/other' });

    // Act
    const responses = [
      await api.request('GET', `/v1/chat/webhooks/${endpoint.id}`, { key: other.key }),
      await api.request('PATCH', `/v1/chat/webhooks/${endpoint.id}`, { key: other.key, body: { enabled: false } }),
      await api.request('POST', `/v1/chat/webhooks/${endpoint.id}/rotate-secret`, { key: other.key }),
      await api.request('DELETE', `/v1/chat/webhooks/${endpoint.id}`, { key: other.key }),
    ];
    const otherList = await api.request('GET', '/v1/chat/webhooks', { key: other.key });
    const ownerList = await api.request('GET', '/v1/chat/webhooks', { key: owner.key });

    // Assess
    for (const response of responses) expectError(response, 404, 'NOT_FOUND');
    expect(otherList.body.data.map((item: any) => item.id)).toEqual([own.id]);
    expect(ownerList.body.data).toEqual([endpoint]);
    expect((await store.deliverable(owner.orgId, endpoint.id, Date.now()))?.secrets).toEqual([secret]);
    expect(await store.deliverable(other.orgId, endpoint.id, Date.now())).toBeUndefined();
    expect((await store.deliverableFor(other.orgId, 'session.created', Date.now())).map((item) => item.id)).toEqual([own.id]);
  });
});

describe('scopes', () => {
  it('lets webhooks:read list and read but not write', async () => {
    // Prepare
    const { orgId, key } = await api.newOrg();
    const endpoint = await createWebhook(key);
    const reader = await api.newKey(orgId, ['webhooks:read']);

    // Act
    const reads = [
      await api.request('GET', '/v1/chat/webhooks', { key: reader }),
      await api.request('GET', `/v1/chat/webhooks/${endpoint.id}`, { key: reader }),
    ];
    const writes = [
      await api.request('POST', '/v1/chat/webhooks', { key: reader, body: validWebhook() }),
      await api.request('PATCH', `/v1/chat/webhooks/${endpoint.id}`, { key: reader, body: { enabled: false } }),
      await api.request('POST', `/v1/chat/webhooks/${endpoint.id}/rotate-secret`, { key: reader }),
      await api.request('DELETE', `/v1/chat/webhooks/${endpoint.id}`, { key: reader }),
    ];

    // Assess
    for (const response of reads) expect(response.status).toBe(200);
    for (const response of writes) expectError(response, 403, 'FORBIDDEN');
    expect(await webhookTotal(key)).toBe(1);
    expect((await api.request('GET', `/v1/chat/webhooks/${endpoint.id}`, { key })).body.enabled).toBe(true);
  });

  it('lets webhooks:write do everything, and refuses other scopes', async () => {
    // Prepare
    const { orgId } = await api.newOrg();
    const writer = await api.newKey(orgId, ['webhooks:write']);
    const stranger = await api.newKey(orgId, ['tools:write', 'chat:write']);

    // Act
    const created = await api.request('POST', '/v1/chat/webhooks', { key: writer, body: validWebhook() });
    const listed = await api.request('GET', '/v1/chat/webhooks', { key: writer });
    const refused = await api.request('GET', '/v1/chat/webhooks', { key: stranger });

    // Assess
    expect(created.status).toBe(201);
    expect(listed.body.pagination.total).toBe(1);
    expectError(refused, 403, 'FORBIDDEN');
  });

  it('refuses requests without credentials', async () => {
    // Act
    const response = await api.request('GET', '/v1/chat/webhooks');

    // Assess
    expectError(response, 401, 'UNAUTHORIZED');
  });
});

describe('WebhookStore delivery reads', () => {
  it('deliverableFor keeps enabled endpoints subscribed to the type or to "*", with their secrets', async () => {
    // Prepare
    const { orgId, key } = await api.newOrg();
    const created = await createWebhook(key, { events: ['session.created'] });
    const all = await createWebhook(key, { events: ['*'] });
    const ended = await createWebhook(key, { events: ['session.ended', 'session.closed'] });
    const disabled = await createWebhook(key, { events: ['session.created'], enabled: false });
    const disabledAll = await createWebhook(key, { events: ['*'], enabled: false });
    const now = Date.now();

    // Act
    const forCreated = await store.deliverableFor(orgId, 'session.created', now);
    const forClosed = await store.deliverableFor(orgId, 'session.closed', now);
    const forUsage = await store.deliverableFor(orgId, 'usage.updated', now);

    // Assess
    const ids = (endpoints: { id: string }[]) => endpoints.map((endpoint) => endpoint.id).sort();
    expect(ids(forCreated)).toEqual([created.id, all.id].sort());
    expect(ids(forClosed)).toEqual([all.id, ended.id].sort());
    expect(ids(forUsage)).toEqual([all.id]);
    const { secret, ...record } = created;
    expect(forCreated.find((endpoint) => endpoint.id === created.id)).toEqual({ ...record, secrets: [secret] });
    expect(forCreated.find((endpoint) => endpoint.id === all.id)?.secrets).toEqual([all.secret]);
    expect(ids(forCreated)).not.toContain(disabled.id);
    expect(ids(forUsage)).not.toContain(disabledAll.id);
  });

  it('follows PATCHes of events and enabled', async () => {
    // Prepare
    const { orgId, key } = await api.newOrg();
    const endpoint = await createWebhook(key, { events: ['session.created'] });
    await api.request('PATCH', `/v1/chat/webhooks/${endpoint.id}`, { key, body: { events: ['session.ended'] } });

    // Act
    const afterEvents = await store.deliverableFor(orgId, 'session.created', Date.now());
    const ended = await store.deliverableFor(orgId, 'session.ended', Date.now());
    await api.request('PATCH', `/v1/chat/webhooks/${endpoint.id}`, { key, body: { enabled: false } });
    const afterDisable = await store.deliverableFor(orgId, 'session.ended', Date.now());

    // Assess
    expect(afterEvents).toEqual([]);
    expect(ended.map((item) => item.id)).toEqual([endpoint.id]);
    expect(afterDisable).toEqual([]);
  });

  it('signs with both secrets during the rotation overlap and with the new one only after it', async () => {
    // Prepare
    const { orgId, key } = await api.newOrg();
    const endpoint = await createWebhook(key, { events: ['*'] });
    const rotated = (await api.request('POST', `/v1/chat/webhooks/${endpoint.id}/rotate-secret`, { key })).body;
    const validUntil = Date.parse(rotated.previousSecretValidUntil);

    // Act
    const during = await store.deliverable(orgId, endpoint.id, Date.now());
    const lastMoment = await store.deliverable(orgId, endpoint.id, validUntil - 1);
    const after = await store.deliverable(orgId, endpoint.id, validUntil + 1);
    const fanOutDuring = await store.deliverableFor(orgId, 'session.created', Date.now());
    const fanOutAfter = await store.deliverableFor(orgId, 'session.created', validUntil + 60_000);

    // Assess
    expect(during?.secrets).toEqual([rotated.secret, endpoint.secret]);
    expect(lastMoment?.secrets).toEqual([rotated.secret, endpoint.secret]);
    expect(after?.secrets).toEqual([rotated.secret]);
    expect(fanOutDuring.map((item) => item.secrets)).toEqual([[rotated.secret, endpoint.secret]]);
    expect(fanOutAfter.map((item) => item.secrets)).toEqual([[rotated.secret]]);
    const { secret: _secret, ...record } = endpoint;
    expect(after).toEqual({ ...record, secrets: [rotated.secret] });
  });

  it('deliverable is undefined for an unknown endpoint', async () => {
    // Prepare
    const { orgId } = await api.newOrg();

    // Act
    const endpoint = await store.deliverable(orgId, unknownId, Date.now());

    // Assess
    expect(endpoint).toBeUndefined();
  });
});

describe('URL checks against the deployment’s configuration', () => {
  const resolverFor =
    (...addresses: string[]): Resolver =>
    (_hostname, _options, callback) =>
      callback(null, addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })));
  const withoutLoopback = { config: { LOOPBACK_EGRESS_PORTS: [], EGRESS_DENIED_PORTS: [] } };

  it.each(['http://127.0.0.1:8080/hooks', 'http://localhost/hooks', 'http://[::1]/hooks'])(
    'refuses http on loopback (%s) with VALIDATION_ERROR where loopback egress is not allowed',
    async (url) => {
      // Act
      const outcome = assertDeliverableUrl(withoutLoopback, url);

      // Assess
      await expect(outcome).rejects.toMatchObject({ code: 'VALIDATION_ERROR', details: [{ field: 'url', message: expect.stringContaining('(LOOPBACK_EGRESS_PORTS opens none)') }] });
    },
  );

  it.each(['https://127.0.0.1/hooks', 'https://localhost/hooks'])(
    'refuses https on loopback (%s) with WEBHOOK_URL_NOT_ALLOWED where loopback egress is not allowed',
    async (url) => {
      // Act
      const outcome = assertDeliverableUrl(withoutLoopback, url);

      // Assess
      await expect(outcome).rejects.toMatchObject({ code: 'WEBHOOK_URL_NOT_ALLOWED', details: [{ field: 'url', message: expect.stringContaining('(LOOPBACK_EGRESS_PORTS opens none)') }] });
    },
  );

  it('accepts loopback only on an opened port, and never a platform port', async () => {
    // Prepare
    const opened = { config: { LOOPBACK_EGRESS_PORTS: [[8080, 8080]] as [number, number][], EGRESS_DENIED_PORTS: [[3000, 3000]] as [number, number][] } };

    // Act / Assess
    await expect(assertDeliverableUrl(opened, 'http://127.0.0.1:8080/hooks')).resolves.toBeUndefined();
    await expect(assertDeliverableUrl(opened, 'http://127.0.0.1:8081/hooks')).rejects.toMatchObject({ code: 'VALIDATION_ERROR' });
    await expect(assertDeliverableUrl(opened, 'https://localhost:8081/hooks')).rejects.toMatchObject({ code: 'WEBHOOK_URL_NOT_ALLOWED' });
    await expect(assertDeliverableUrl(opened, 'http://localhost:3000/hooks')).rejects.toMatchObject({ code: 'WEBHOOK_URL_NOT_ALLOWED' });
    await expect(
      assertDeliverableUrl({ ...opened, resolveHost: resolverFor('93.184.215.14') }, 'https://hooks.example.com:3000/in'),
    ).rejects.toMatchObject({ code: 'WEBHOOK_URL_NOT_ALLOWED' });
  });

  it('refuses a name that resolves to a private address, even among public ones', async () => {
    // Act
    const outcome = assertDeliverableUrl({ ...withoutLoopback, resolveHost: resolverFor('93.184.215.14', '10.1.2.3') }, 'https://hooks.example.com/in');

    // Assess
    await expect(outcome).rejects.toMatchObject({ code: 'WEBHOOK_URL_NOT_ALLOWED' });
  });

  it('accepts a name that resolves to public addresses only', async () => {
    // Act
    const outcome = assertDeliverableUrl(
      { ...withoutLoopback, resolveHost: resolverFor('93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c') },
      'https://hooks.example.com/in',
    );

    // Assess
    await expect(outcome).resolves.toBeUndefined();
  });
});
