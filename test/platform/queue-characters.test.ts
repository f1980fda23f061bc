/**
 * Whatever text the API accepts crosses every queue intact: characters above U+FFFF (emoji), which the local SQS
 * emulator refuses raw, and U+FFFE/U+FFFF, which SQS itself refuses raw. Through the event router (webhooks),
 * the WhatsApp inbound queue and the knowledge ingestion queue, as `npm start` runs them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, startApi, type TestApi } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';
import { Receiver } from '../support/webhook-receiver.ts';
import { messagesOf, repliesTo, uniqueCustomer, whatsappOrg } from '../support/whatsapp.ts';

let api: TestApi;
const receiver = new Receiver();
let receiverUrl: string;
const vectorDir = mkdtempSync(join(tmpdir(), 'queue-characters-vectors-'));

beforeAll(async () => {
  receiverUrl = await receiver.start();
  api = await startApi({ KNOWLEDGE_VECTOR_DIR: vectorDir, USAGE_ROLLUP_SECONDS: '1' }, { streamPoller: true, queues: { visibilityTimeoutSeconds: 5 }, whatsapp: true });
});
afterAll(async () => {
  await api.close();
  await receiver.close();
  rmSync(vectorDir, { recursive: true, force: true });
});

const thanks = 'Thanks 😀 𝄞 👍🏽';
const echo = (text: string) => `You said: "${text}". I am the built-in offline model; connect a provider model for real answers.`;

async function chatSession(key: string): Promise<string> {
  const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'Ada', description: 'Support', role: 'Support' } });
  expect(agent.status, agent.text).toBe(201);
  const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } });
  expect(session.status, session.text).toBe(201);
  return session.body.id;
}

describe('text beyond the Basic Multilingual Plane', () => {
  it('reaches the webhook in the events of a chat message, and its usage in usage.updated', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const events = ['session.message.created', 'message.added', 'usage.updated'];
    const created = await api.request('POST', '/v1/chat/webhooks', { key, body: { url: `${receiverUrl}/ok/emoji`, events } });
    expect(created.status, created.text).toBe(201);
    const sessionId = await chatSession(key);

    // Act
    const sent = await api.request('POST', `/v1/chat/chat/sessions/${sessionId}/messages`, { key, body: { content: thanks, stream: false } });

    // Assess
    expect(sent.status, sent.text).toBe(200);
    const ofType = (type: string) => receiver.for('/ok/emoji').filter((receipt) => (receipt.body.eventType ?? receipt.body.type) === type);
    const metered = () => ofType('usage.updated').map((receipt) => receipt.body.data.metrics.chat_messages);
    await eventually(
      () => [metered(), ofType('session.message.created'), ofType('message.added')] as const,
      ([usage, created, added]) => usage.includes(2) && created.length >= 1 && added.length >= 2,
    );
    expect(metered()).toContain(2);
    expect(ofType('session.message.created').map((receipt) => receipt.body.content)).toEqual([thanks]);
    expect(ofType('message.added').map((receipt) => receipt.body.data.content).sort()).toEqual([echo(thanks), thanks].sort());
  }, 60_000); // The suite's first requests start the handlers: slow on a busy machine.

  it('in a WhatsApp message is answered', async () => {
    // Prepare
    const org = await whatsappOrg(api);
    const customer = uniqueCustomer();

    // Act
    const posted = await api.whatsapp!.customerSays({ phoneNumberId: org.phoneNumberId, from: customer, name: 'Zoë 🌻', text: thanks });

    // Assess
    expect(posted.status).toBe(200);
    expect(await repliesTo(api.whatsapp!, org, customer, 1)).toEqual([echo(thanks)]);
  });

  it('in an inline knowledge document is ingested (UPSERTED), and found by a query', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const store = await api.request('POST', '/v1/chat/knowledge-stores', { key, body: { name: 'Emoji 📚' } });
    expect(store.status, store.text).toBe(201);

    // Act
    const document = await api.request('POST', `/v1/chat/knowledge-stores/${store.body.id}/documents`, {
      key,
      body: { name: 'Reactions 😀', text: '# Reactions\n\nCustomers who send 👍 are happy with the answer; 😡 means they want a person.\n' },
    });

    // Assess
    expect(document.status, document.text).toBe(202);
    const settled = await eventually(
      async () => (await api.request('GET', `/v1/chat/knowledge-stores/${store.body.id}/documents/${document.body.id}`, { key })).body,
      (found) => found?.status !== 'PROCESSING',
      60_000,
    );
    expect(settled.status).toBe('UPSERTED');
    const found = await api.request('POST', `/v1/chat/knowledge-stores/${store.body.id}/query`, { key, body: { query: 'what does 😡 mean' } });
    expect(found.status, found.text).toBe(200);
    expect(found.body.data[0]).toMatchObject({ documentName: 'Reactions 😀', text: expect.stringContaining('😡 means they want a person') });
  }, 90_000);
});

describe('U+FFFE and U+FFFF', () => {
  it.each([
    ['raw', '{"content":"Thanks \uffff","stream":false}'],
    ['escaped in JSON', '{"content":"Thanks \\uFFFE","stream":false}'],
  ])('in a JSON body (%s) are refused with 400 VALIDATION_ERROR naming the field, and nothing is stored', async (_, rawBody) => {
    // Prepare
    const { key } = await api.newOrg();
    const sessionId = await chatSession(key);

    // Act
    const response = await api.request('POST', `/v1/chat/chat/sessions/${sessionId}/messages`, { key, rawBody, headers: { 'content-type': 'application/json' } });

    // Assess
    expectError(response, 400, 'VALIDATION_ERROR', 'content');
    const messages = await api.request('GET', `/api/v1/chat/sessions/${sessionId}/messages`, { key });
    expect(messages.body.pagination.total).toBe(0);
  });

  it('in a property name of a JSON body are refused with 400 VALIDATION_ERROR', async () => {
    const { key } = await api.newOrg();
    const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'Ada', description: 'Support', role: 'Support' } });

    const response = await api.request('POST', '/v1/chat/chat/sessions', {
      key,
      rawBody: `{"agentId":"${agent.body.id}","metadata":{"note\\uffff":1}}`,
      headers: { 'content-type': 'application/json' },
    });

    expectError(response, 400, 'VALIDATION_ERROR', 'metadata.note\uffff');
  });

  it('in a WhatsApp message Meta sends are carried faithfully: the message is stored and answered', async () => {
    // Prepare
    const org = await whatsappOrg(api);
    const customer = uniqueCustomer();
    const text = 'odd \ufffe\uffff text 😀';

    // Act
    const posted = await api.whatsapp!.customerSays({ phoneNumberId: org.phoneNumberId, from: customer, text });

    // Assess
    expect(posted.status).toBe(200);
    expect(await repliesTo(api.whatsapp!, org, customer, 1)).toEqual([echo(text)]);
    const sessions = await api.request('GET', '/v1/chat/chat/sessions?platform=WHATSAPP&limit=100', { key: org.key });
    const session = sessions.body.data.find((candidate: any) => candidate.metadata.whatsapp?.customerWaId === customer);
    const [said] = await messagesOf(api, org, session.id);
    expect(said.content).toBe(text);
  });
});
