import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';
import { closeServer, listenOnLoopback } from '../support/loopback-server.ts';
import { startWeatherApi } from '../support/voice.ts';
import { customerSessions, messagesOf, metaFixture, repliesTo, uniqueCustomer, whatsappOrg } from '../support/whatsapp.ts';

let api: TestApi;
const vectorDir = mkdtempSync(join(tmpdir(), 'whatsapp-vectors-'));
let weather: { url: string; server: Server };

beforeAll(async () => {
  weather = await startWeatherApi();
  api = await startApi({ WHATSAPP_SEND_RETRY_MS: '10,20,30', KNOWLEDGE_VECTOR_DIR: vectorDir }, { queues: { visibilityTimeoutSeconds: 2 }, whatsapp: true });
  // Loads the agents' and numbers' handlers (a cold start takes 20 s on a busy machine) outside the tests' time limit.
  await whatsappOrg(api);
});
afterAll(async () => {
  await api.close();
  await closeServer(weather.server);
  rmSync(vectorDir, { recursive: true, force: true });
});

const simulator = () => api.whatsapp!;
const echo = (text: string) => `You said: "${text}". I am the built-in offline model; connect a provider model for real answers.`;

describe('a WhatsApp conversation', () => {
  it('answers several messages in one session, a tool call announced by its pre-execution message sent on its own', async () => {
    const org = await whatsappOrg(api, { toolUrl: weather.url });
    const customer = uniqueCustomer();
    const first = await simulator().customerSays({ phoneNumberId: org.phoneNumberId, from: customer, name: 'Ana', text: 'Hello there' });
    expect(first.status).toBe(200);
    expect(await repliesTo(simulator(), org, customer, 1)).toEqual([echo('Hello there')]);
    await simulator().customerSays({ phoneNumberId: org.phoneNumberId, from: customer, text: 'Use get_weather with {"city":"Paris"}' });
    const replies = await repliesTo(simulator(), org, customer, 3);
    expect(replies).toEqual([echo('Hello there'), 'One moment, I am checking the weather.', 'The get_weather tool returned: {"tempC":21}']);

    const [session, ...others] = await customerSessions(api, org, customer);
    expect(others).toHaveLength(0);
    expect(session).toMatchObject({ type: 'CHAT', platform: 'WHATSAPP', direction: 'INBOUND', state: 'OPEN', agentId: org.agentId });
    expect(session.metadata.whatsapp).toMatchObject({ numberId: org.numberId, phoneNumberId: org.phoneNumberId, customerWaId: customer, customerName: 'Ana' });
    const transcript = await eventually(
      () => messagesOf(api, org, session.id),
      (found) => found.at(-1)?.metadata.whatsapp?.sends?.every((send: any) => send.status === 'delivered'),
    );
    expect(transcript.map((message) => message.role)).toEqual(['USER', 'ASSISTANT', 'USER', 'TOOL', 'ASSISTANT']);
    expect(transcript[0].metadata.whatsapp).toMatchObject({ wamid: first.wamid, type: 'text' });
    expect(transcript[3].toolCall).toMatchObject({ name: 'get_weather', arguments: { city: 'Paris' }, status: 'SUCCESS' });
    const wamids = simulator().sent.filter((message) => message.to === customer).map((message) => message.wamid);
    expect(transcript[4].content).toBe('One moment, I am checking the weather.\n\nThe get_weather tool returned: {"tempC":21}');
    expect(transcript[4].metadata.whatsapp.sends).toEqual([
      expect.objectContaining({ wamid: wamids[1], status: 'delivered', attempts: 1 }),
      expect.objectContaining({ wamid: wamids[2], status: 'delivered', attempts: 1 }),
    ]);
  });

  // The document's ingestion loads the built-in embedder first: slow on a busy machine, hence the longer timeout.
  it("grounds the reply in the agent's knowledge store, with citations on the reply", async () => {
    const org = await whatsappOrg(api);
    const store = await api.request('POST', '/v1/chat/knowledge-stores', { key: org.key, body: { name: 'Help center', config: { topK: 1 } } });
    expect(store.status, store.text).toBe(201);
    const text = '# Refund policy\n\n## Deadlines\nRefunds are accepted within 30 days of purchase. After 30 days we offer store credit instead.\n';
    const document = await api.request('POST', `/v1/chat/knowledge-stores/${store.body.id}/documents`, { key: org.key, body: { name: 'Refund policy', text } });
    expect(document.status, document.text).toBe(202);
    await eventually(
      async () => (await api.request('GET', `/v1/chat/knowledge-stores/${store.body.id}/documents/${document.body.id}`, { key: org.key })).body,
      (found) => found?.status === 'READY',
    );
    expect((await api.request('PATCH', `/v2/chat/agents/${org.agentId}`, { key: org.key, body: { knowledgeStoreId: store.body.id } })).status).toBe(200);
    const customer = uniqueCustomer();
    await simulator().customerSays({ phoneNumberId: org.phoneNumberId, from: customer, text: 'How many days do I have for a refund?' });
    const [reply] = await repliesTo(simulator(), org, customer, 1);
    expect(reply).toMatch(/^According to Refund policy › Refund policy › Deadlines \[1\]: Refunds are accepted within 30 days/);
    const [session] = await customerSessions(api, org, customer);
    const [, assistant] = await messagesOf(api, org, session.id);
    expect(assistant.metadata.citations).toEqual([expect.objectContaining({ documentId: document.body.id, documentName: 'Refund policy' })]);
  }, 90_000);

  it('answers a message Meta delivers twice (and again later) once', async () => {
    const org = await whatsappOrg(api);
    const customer = uniqueCustomer();
    const { body } = simulator().notificationOf({ phoneNumberId: org.phoneNumberId, from: customer, text: 'Only once please' });
    const signature = simulator().sign(org.phoneNumberId, body);
    const deliveries = await Promise.all([simulator().post(org.phoneNumberId, body, signature), simulator().post(org.phoneNumberId, body, signature)]);
    expect(deliveries.map((delivery) => delivery.status)).toEqual([200, 200]);
    await repliesTo(simulator(), org, customer, 1);
    // Meta retries for days: past SQS's 5-minute deduplication, the consumer's claim on the message id holds.
    expect((await simulator().post(org.phoneNumberId, body, signature)).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await repliesTo(simulator(), org, customer, 1)).toEqual([echo('Only once please')]);
    const [session] = await customerSessions(api, org, customer);
    expect((await messagesOf(api, org, session.id)).map((message) => message.role)).toEqual(['USER', 'ASSISTANT']);
  });

  it('answers messages delivered out of order each once, and never moves a status backwards', async () => {
    const org = await whatsappOrg(api);
    const customer = uniqueCustomer();
    const now = Math.floor(Date.now() / 1000);
    const earlier = simulator().notificationOf({ phoneNumberId: org.phoneNumberId, from: customer, text: 'first written', timestamp: now - 5 });
    const later = simulator().notificationOf({ phoneNumberId: org.phoneNumberId, from: customer, text: 'second written', timestamp: now - 1 });
    simulator().reportStatuses = false;
    try {
      await simulator().post(org.phoneNumberId, later.body, simulator().sign(org.phoneNumberId, later.body));
      await simulator().post(org.phoneNumberId, earlier.body, simulator().sign(org.phoneNumberId, earlier.body));
      expect(await repliesTo(simulator(), org, customer, 2)).toEqual([echo('second written'), echo('first written')]);
      const [session] = await customerSessions(api, org, customer);
      const transcript = await eventually(() => messagesOf(api, org, session.id), (found) => found.length === 4 && Boolean(found[3].metadata.whatsapp));
      expect(transcript.filter((message) => message.role === 'USER').map((message) => message.metadata.whatsapp.wamid)).toEqual([later.wamid, earlier.wamid]);
      const reply = simulator().sent.find((message) => message.to === customer)!;
      const firstReplySend = async () => (await messagesOf(api, org, session.id))[1].metadata.whatsapp.sends[0];
      await simulator().reportStatus(reply.wamid, 'read');
      await eventually(firstReplySend, (send) => send.status === 'read');
      await simulator().reportStatus(reply.wamid, 'delivered');
      await simulator().reportStatus(reply.wamid, 'sent');
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect(await firstReplySend()).toMatchObject({ wamid: reply.wamid, status: 'read' });
    } finally {
      simulator().reportStatuses = true;
    }
  });

  it('retries a failed send with backoff and records the attempts; a send that keeps failing is recorded as failed', async () => {
    const org = await whatsappOrg(api);
    const customer = uniqueCustomer();
    simulator().failNextSends(org.phoneNumberId, 2);
    await simulator().customerSays({ phoneNumberId: org.phoneNumberId, from: customer, text: 'Are you there?' });
    expect(await repliesTo(simulator(), org, customer, 1)).toEqual([echo('Are you there?')]);
    const [session] = await customerSessions(api, org, customer);
    const [, reply] = await eventually(() => messagesOf(api, org, session.id), (found) => Boolean(found[1]?.metadata.whatsapp));
    expect(reply.metadata.whatsapp.sends[0]).toMatchObject({ status: expect.stringMatching(/^(sent|delivered)$/), attempts: 3 });

    simulator().failNextSends(org.phoneNumberId, 10, 503);
    await simulator().customerSays({ phoneNumberId: org.phoneNumberId, from: customer, text: 'Hello again?' });
    const transcript = await eventually(() => messagesOf(api, org, session.id), (found) => Boolean(found[3]?.metadata.whatsapp));
    expect(transcript[3].metadata.whatsapp.sends).toEqual([
      expect.objectContaining({ status: 'failed', attempts: 4, error: expect.objectContaining({ code: 'WHATSAPP_UNAVAILABLE' }) }),
    ]);
    expect(simulator().attempts.filter((attempt) => attempt.to === customer).map((attempt) => attempt.status)).toEqual([500, 500, 200, 503, 503, 503, 503]);
    simulator().failNextSends(org.phoneNumberId, 0);
  });

  it('does not retry a send Meta refuses for its token, and records why', async () => {
    const org = await whatsappOrg(api);
    const customer = uniqueCustomer();
    const replaced = await api.request('PATCH', `/v1/chat/whatsapp/numbers/${org.numberId}`, { key: org.key, body: { accessToken: 'EAAa-token-meta-never-issued' } });
    expect(replaced.status, replaced.text).toBe(200);
    await simulator().customerSays({ phoneNumberId: org.phoneNumberId, from: customer, text: 'Anyone?' });
    const [session] = await eventually(() => customerSessions(api, org, customer), (found) => found.length === 1);
    const [, reply] = await eventually(() => messagesOf(api, org, session.id), (found) => Boolean(found[1]?.metadata.whatsapp));
    expect(reply.metadata.whatsapp.sends).toEqual([expect.objectContaining({ status: 'failed', attempts: 1, error: expect.objectContaining({ code: 'WHATSAPP_CREDENTIALS_REJECTED' }) })]);
    expect(simulator().attempts.filter((attempt) => attempt.to === customer).map((attempt) => attempt.status)).toEqual([401]);
  });

  it('splits a reply longer than WhatsApp allows into messages of at most 4096 characters', async () => {
    const forecast = Array.from({ length: 900 }, (_, index) => `day${index}`).join(' ');
    const longApi = createServer((_request, response) => response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ forecast })));
    const port = await listenOnLoopback(longApi);
    try {
      const org = await whatsappOrg(api, { toolUrl: `http://127.0.0.1:${port}/forecast` });
      const customer = uniqueCustomer();
      await simulator().customerSays({ phoneNumberId: org.phoneNumberId, from: customer, text: 'Use get_weather with {"city":"Oslo"}' });
      const [announcement, ...parts] = await repliesTo(simulator(), org, customer, 3);
      expect(announcement).toBe('One moment, I am checking the weather.');
      expect(parts.map((part) => part.length <= 4096)).toEqual([true, true]);
      expect(parts.join(' ')).toBe(`The get_weather tool returned: ${JSON.stringify({ forecast })}`);
    } finally {
      await closeServer(longApi);
    }
  });

  it("answers a message it cannot read (a location) with the number's reply; a voice note without a speech-to-text model reaches the agent as a placeholder", async () => {
    const org = await whatsappOrg(api, { number: { unsupportedMessageReply: 'Text only, please!' } });
    const customer = uniqueCustomer();
    await simulator().customerSays({ phoneNumberId: org.phoneNumberId, from: customer, type: 'location' });
    expect(await repliesTo(simulator(), org, customer, 1)).toEqual(['Text only, please!']);
    await simulator().customerSays({ phoneNumberId: org.phoneNumberId, from: customer, type: 'audio' });
    const placeholder = '[voice note: not transcribed, no speech-to-text model]';
    expect(await repliesTo(simulator(), org, customer, 2)).toEqual(['Text only, please!', echo(placeholder)]);
    const [session] = await customerSessions(api, org, customer);
    const transcript = await eventually(() => messagesOf(api, org, session.id), (found) => found.length === 4);
    expect(transcript.filter((message) => message.role === 'USER').map((message) => [message.content, message.metadata.whatsapp.type])).toEqual([
      ['[location]', 'location'],
      [placeholder, 'audio'],
    ]);
    expect(transcript[2].metadata.whatsapp.media).toMatchObject({ voice: true, stored: true, error: { code: 'NO_TRANSCRIPTION_MODEL' } });
  });

  it('refuses to reply outside the 24-hour window, with the reason in the reply\'s metadata', async () => {
    const org = await whatsappOrg(api);
    const customer = uniqueCustomer();
    await simulator().customerSays({ phoneNumberId: org.phoneNumberId, from: customer, text: 'Sent yesterday', timestamp: Math.floor(Date.now() / 1000) - 25 * 60 * 60 });
    const [session] = await eventually(() => customerSessions(api, org, customer), (found) => found.length === 1);
    const [, reply] = await eventually(() => messagesOf(api, org, session.id), (found) => Boolean(found[1]?.metadata.whatsapp));
    expect(reply.content).toBe(echo('Sent yesterday'));
    expect(reply.metadata.whatsapp.sends).toEqual([
      expect.objectContaining({ status: 'refused', attempts: 0, error: expect.objectContaining({ code: 'WHATSAPP_WINDOW_CLOSED' }) }),
    ]);
    expect(simulator().attempts.filter((attempt) => attempt.to === customer)).toHaveLength(0);
  });

  it('takes Meta\'s word on the window: a reply Meta accepts and then fails with 131047 is recorded as WHATSAPP_WINDOW_CLOSED', async () => {
    const org = await whatsappOrg(api);
    const customer = uniqueCustomer();
    // A notification Meta never sent (straight to the webhook): the simulator, like Meta, has no message of this customer.
    const { body } = simulator().notificationOf({ phoneNumberId: org.phoneNumberId, from: customer, text: 'Are you open today?' });
    const posted = await fetch(`${api.baseUrl}/whatsapp/webhook/${org.phoneNumberId}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-hub-signature-256': simulator().sign(org.phoneNumberId, body) }, body });
    expect(posted.status).toBe(200);
    const [session] = await eventually(() => customerSessions(api, org, customer), (found) => found.length === 1);
    const [, reply] = await eventually(() => messagesOf(api, org, session.id), (found) => found[1]?.metadata.whatsapp?.sends?.[0]?.status === 'failed');
    expect(reply.metadata.whatsapp.sends[0]).toMatchObject({ status: 'failed', wamid: expect.any(String), error: { code: 'WHATSAPP_WINDOW_CLOSED', message: expect.stringContaining('Re-engagement message') } });
    expect(simulator().attempts.filter((attempt) => attempt.to === customer).map((attempt) => attempt.status)).toEqual([200]);
  });

  it("reads Meta's documented failed status for the closed window (131047)", async () => {
    const org = await whatsappOrg(api);
    const customer = uniqueCustomer();
    simulator().reportStatuses = false;
    try {
      await simulator().customerSays({ phoneNumberId: org.phoneNumberId, from: customer, text: 'Still there?' });
      await repliesTo(simulator(), org, customer, 1);
      const wamid = simulator().sent.find((message) => message.to === customer)!.wamid;
      const [session] = await customerSessions(api, org, customer);
      await eventually(() => messagesOf(api, org, session.id), (found) => found[1]?.metadata.whatsapp?.sends?.[0]?.status === 'sent');
      const body = JSON.stringify(
        metaFixture('status-failed-re-engagement', {
          WHATSAPP_BUSINESS_ACCOUNT_ID: '102290129340398',
          PHONE_NUMBER_ID: org.phoneNumberId,
          PHONE_NUMBER: '15550783881',
          WAMID: wamid,
          TIMESTAMP: String(Math.floor(Date.now() / 1000)),
          WHATSAPP_ID: customer,
        }),
      );
      expect((await simulator().post(org.phoneNumberId, body, simulator().sign(org.phoneNumberId, body))).status).toBe(200);
      const [, reply] = await eventually(() => messagesOf(api, org, session.id), (found) => found[1]?.metadata.whatsapp?.sends?.[0]?.status === 'failed');
      expect(reply.metadata.whatsapp.sends[0].error).toEqual({
        code: 'WHATSAPP_WINDOW_CLOSED',
        message: expect.stringMatching(/^More than 24 hours since the customer's last message: .*Re-engagement message$/),
      });
    } finally {
      simulator().reportStatuses = true;
    }
  });
});
