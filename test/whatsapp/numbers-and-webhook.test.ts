import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '../../shared/platform/store/keys.ts';
import { metaSignature } from '../../shared/whatsapp/meta-signature.ts';
import { expectError, startApi, type TestApi } from '../support/api.ts';
import { customerSessions, repliesTo, uniqueCustomer, uniquePhoneNumberId, whatsappOrg } from '../support/whatsapp.ts';
import { testDocuments, testTableName } from '../support/database.ts';

let api: TestApi;

beforeAll(async () => {
  api = await startApi({}, { queues: true, whatsapp: true });
});
afterAll(() => api.close());

const simulator = () => api.whatsapp!;
const settle = () => new Promise((resolve) => setTimeout(resolve, 1000));

describe('WhatsApp numbers', () => {
  it('connects, lists, reads, changes and disconnects a number, never showing its secrets', async () => {
    const org = await whatsappOrg(api);
    const got = await api.request('GET', `/v1/chat/whatsapp/numbers/${org.numberId}`, { key: org.key });
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({
      id: org.numberId,
      phoneNumberId: org.phoneNumberId,
      agentId: org.agentId,
      webhookUrl: `${api.baseUrl}/whatsapp/webhook/${org.phoneNumberId}`,
      unsupportedMessageReply: expect.any(String),
    });
    for (const secret of Object.values(org.secrets)) expect(got.text).not.toContain(secret);
    const listed = await api.request('GET', '/v1/chat/whatsapp/numbers?limit=500', { key: org.key });
    expect(listed.body).toMatchObject({ data: [{ id: org.numberId }], pagination: { page: 1, limit: 100, total: 1, totalPages: 1 } });
    const changed = await api.request('PATCH', `/v1/chat/whatsapp/numbers/${org.numberId}`, { key: org.key, body: { label: 'Support', unsupportedMessageReply: 'Text please' } });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body).toMatchObject({ label: 'Support', unsupportedMessageReply: 'Text please' });
    expect((await api.request('DELETE', `/v1/chat/whatsapp/numbers/${org.numberId}`, { key: org.key })).status).toBe(204);
    expectError(await api.request('GET', `/v1/chat/whatsapp/numbers/${org.numberId}`, { key: org.key }), 404, 'NOT_FOUND');
    // Disconnected, the number is free for any organization.
    const other = await api.newOrg();
    const agent = await api.request('POST', '/v2/chat/agents', { key: other.key, body: { fullName: 'B', description: 'B', role: 'B' } });
    const again = await api.request('POST', '/v1/chat/whatsapp/numbers', { key: other.key, body: { phoneNumberId: org.phoneNumberId, displayPhoneNumber: '+1 555 010 0100', agentId: agent.body.id, ...org.secrets } });
    expect(again.status, again.text).toBe(201);
  });

  it('keeps the access token, app secret and verify token sealed at rest, also after a PATCH replaces one', async () => {
    const org = await whatsappOrg(api);
    const replaced = await api.request('PATCH', `/v1/chat/whatsapp/numbers/${org.numberId}`, { key: org.key, body: { accessToken: 'EAAreplacement-token-1234' } });
    expect(replaced.status, replaced.text).toBe(200);
    const { Item } = await testDocuments.send(new GetCommand({ TableName: testTableName(), Key: keys.whatsappNumber(org.orgId, org.numberId) }));
    const stored = JSON.stringify(Item);
    for (const secret of [...Object.values(org.secrets), 'EAAreplacement-token-1234']) expect(stored).not.toContain(secret);
    expect(Object.values(Item!.sealed as Record<string, string>).map((value) => value.split(':').slice(0, 2).join(':'))).toEqual(['sealed:v1', 'sealed:v1', 'sealed:v1']);
  });

  it('refuses an invalid body with 400 naming the fields, an unknown agent with 404, and scopes short of channels', async () => {
    const { key, orgId } = await api.newOrg();
    const invalid = await api.request('POST', '/v1/chat/whatsapp/numbers', { key, body: { phoneNumberId: 'abc', displayPhoneNumber: '+1 555', agentId: 'x' } });
    expectError(invalid, 400, 'VALIDATION_ERROR', 'phoneNumberId');
    const unknownAgent = await api.request('POST', '/v1/chat/whatsapp/numbers', {
      key,
      body: { phoneNumberId: uniquePhoneNumberId(), displayPhoneNumber: '+1 555 010 0100', agentId: crypto.randomUUID(), accessToken: 'EAAtoken1', appSecret: 'appsecret1', verifyToken: 'verify-token' },
    });
    expectError(unknownAgent, 404, 'NOT_FOUND');
    const reader = await api.newKey(orgId, ['channels:read']);
    expect((await api.request('GET', '/v1/chat/whatsapp/numbers', { key: reader })).status).toBe(200);
    expectError(await api.request('POST', '/v1/chat/whatsapp/numbers', { key: reader, body: {} }), 403, 'FORBIDDEN');
    const chatOnly = await api.newKey(orgId, ['chat:write']);
    expectError(await api.request('GET', '/v1/chat/whatsapp/numbers', { key: chatOnly }), 403, 'FORBIDDEN');
  });

  it('keeps another organization away from a number: not readable, not changeable, not connectable twice, not reachable with its app secret', async () => {
    const owner = await whatsappOrg(api);
    const stranger = await whatsappOrg(api);
    expectError(await api.request('GET', `/v1/chat/whatsapp/numbers/${owner.numberId}`, { key: stranger.key }), 404, 'NOT_FOUND');
    expectError(await api.request('PATCH', `/v1/chat/whatsapp/numbers/${owner.numberId}`, { key: stranger.key, body: { agentId: stranger.agentId } }), 404, 'NOT_FOUND');
    expectError(await api.request('DELETE', `/v1/chat/whatsapp/numbers/${owner.numberId}`, { key: stranger.key }), 404, 'NOT_FOUND');
    const taken = await api.request('POST', '/v1/chat/whatsapp/numbers', {
      key: stranger.key,
      body: { phoneNumberId: owner.phoneNumberId, displayPhoneNumber: '+1 555 010 0100', agentId: stranger.agentId, ...stranger.secrets },
    });
    expectError(taken, 409, 'WHATSAPP_NUMBER_TAKEN');
    // The stranger's app secret signs a message to the owner's number: refused, and nobody answers it.
    const customer = uniqueCustomer();
    const { body } = simulator().notificationOf({ phoneNumberId: owner.phoneNumberId, from: customer, text: 'Let me in' });
    expect((await simulator().post(owner.phoneNumberId, body, metaSignature(stranger.secrets.appSecret, body))).status).toBe(401);
    // A notification to the stranger's own URL naming the owner's number is verified under the owner's secret: dropped.
    const crossed = simulator().notificationOf({ phoneNumberId: owner.phoneNumberId, from: customer, text: 'Through the side door' });
    expect((await simulator().post(stranger.phoneNumberId, crossed.body, metaSignature(stranger.secrets.appSecret, crossed.body))).status).toBe(200);
    await settle();
    expect(simulator().sent.filter((message) => message.to === customer)).toHaveLength(0);
    expect(await customerSessions(api, owner, customer)).toHaveLength(0);
    expect(await customerSessions(api, stranger, customer)).toHaveLength(0);
  });
});

describe("Meta's webhook", () => {
  it('answers the verification handshake with the challenge for the number\'s verify token only', async () => {
    const org = await whatsappOrg(api);
    const handshake = (token: string, phoneNumberId = org.phoneNumberId) =>
      fetch(`${api.baseUrl}/whatsapp/webhook/${phoneNumberId}?hub.mode=subscribe&hub.verify_token=${encodeURIComponent(token)}&hub.challenge=1158201444`);
    const good = await handshake(org.secrets.verifyToken);
    expect(good.status).toBe(200);
    expect(good.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await good.text()).toBe('1158201444');
    const wrong = await handshake('not-the-token');
    expect(wrong.status).toBe(403);
    expect(((await wrong.json()) as { error: { code: string } }).error.code).toBe('FORBIDDEN');
    expect((await handshake(org.secrets.verifyToken, uniquePhoneNumberId())).status).toBe(404);
  });

  it('takes a notification only with a valid X-Hub-Signature-256 over the exact body (401 otherwise), answering nothing else', async () => {
    const org = await whatsappOrg(api);
    const customer = uniqueCustomer();
    const { body } = simulator().notificationOf({ phoneNumberId: org.phoneNumberId, from: customer, text: 'Signed?' });
    const signature = simulator().sign(org.phoneNumberId, body);
    const altered = body.replace('Signed?', 'Altered!');
    const refused = [
      await simulator().post(org.phoneNumberId, body, metaSignature('another-app-secret', body)),
      await simulator().post(org.phoneNumberId, body, undefined),
      await simulator().post(org.phoneNumberId, altered, signature),
      await simulator().post(org.phoneNumberId, body, signature.replace('sha256=', 'sha1=')),
    ];
    for (const response of refused) {
      expect(response.status).toBe(401);
    }
    await settle();
    expect(simulator().sent.filter((message) => message.to === customer)).toHaveLength(0);
    expect(await customerSessions(api, org, customer)).toHaveLength(0);
    expect((await simulator().post(org.phoneNumberId, body, signature)).status).toBe(200);
    expect(await repliesTo(simulator(), org, customer, 1)).toHaveLength(1);
  });

  it('answers a signed notification that is not WhatsApp JSON with 400, and one for an unknown number with 404', async () => {
    const org = await whatsappOrg(api);
    const notJson = 'hello';
    expect((await simulator().post(org.phoneNumberId, notJson, simulator().sign(org.phoneNumberId, notJson))).status).toBe(400);
    const wrongShape = JSON.stringify({ entry: 'nope' });
    expect((await simulator().post(org.phoneNumberId, wrongShape, simulator().sign(org.phoneNumberId, wrongShape))).status).toBe(400);
    const unknown = uniquePhoneNumberId();
    expect((await simulator().post(unknown, notJson, simulator().sign(unknown, notJson))).status).toBe(404);
  });
});
