import { createHash } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { simulatorDefaults, startWhatsappSimulator } from '../../infra/local/whatsapp-simulator.ts';
import { GraphApiError, GraphApiMessaging } from '../../shared/whatsapp/graph-client.ts';
import { closeServer, listenOnLoopback } from '../support/loopback-server.ts';
import { metaFixture } from '../support/whatsapp.ts';

/** A Graph API double answering with Meta's documented payloads (test/fixtures/meta/), recording each request. */
interface FakeGraph {
  baseUrl: string;
  requests: { method: string; url: string; headers: IncomingHttpHeaders; body: string }[];
  server: Server;
}

let graph: FakeGraph | undefined;
afterEach(async () => {
  if (graph) await closeServer(graph.server);
  graph = undefined;
});

async function fakeGraph(answer: (request: { method: string; path: string; body: string }, origin: string) => { status: number; body: string | Uint8Array; type?: string }): Promise<FakeGraph> {
  const requests: FakeGraph['requests'] = [];
  const server = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    requests.push({ method: request.method ?? '', url: request.url ?? '', headers: request.headers, body });
    const answered = answer({ method: request.method ?? '', path: (request.url ?? '').split('?')[0] as string, body }, origin);
    response.writeHead(answered.status, { 'content-type': answered.type ?? 'application/json' }).end(answered.body);
  });
  const port = await listenOnLoopback(server);
  const origin = `http://127.0.0.1:${port}`;
  graph = { baseUrl: `${origin}/v23.0`, requests, server };
  return graph;
}

const token = 'EAAG-test-token';
const jpeg = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(300, 7)]);
const hash = createHash('sha256').update(jpeg).digest('hex');

describe("the Graph API client against Meta's documented payloads", () => {
  it('downloads a media: GET /{media-id} for its URL, then the URL, both with the bearer token', async () => {
    // Prepare
    const { baseUrl, requests } = await fakeGraph(({ path }, origin) =>
      path === '/v23.0/1234567890'
        ? { status: 200, body: JSON.stringify(metaFixture('retrieve-media-url-response', { '<URL>': `${origin}/whatsapp_business/attachments/?mid=1234567890&ext=1700000000&hash=ATs`, '<MIME_TYPE>': 'image/jpeg', '<HASH>': hash, '<FILE_SIZE>': String(jpeg.length), '<MEDIA_ID>': '1234567890' })) }
        : { status: 200, body: jpeg, type: 'image/jpeg' },
    );

    // Act
    const media = await new GraphApiMessaging(baseUrl).downloadMedia({ phoneNumberId: '106540352242922', accessToken: token, mediaId: '1234567890', maxBytes: 5 * 1024 * 1024 });

    // Assess
    expect({ ...media, body: Buffer.from(media.body) }).toEqual({ body: jpeg, mimeType: 'image/jpeg', sha256: hash });
    expect(requests.map((request) => [request.method, request.url, request.headers.authorization])).toEqual([
      ['GET', '/v23.0/1234567890?phone_number_id=106540352242922', `Bearer ${token}`],
      ['GET', '/whatsapp_business/attachments/?mid=1234567890&ext=1700000000&hash=ATs', `Bearer ${token}`],
    ]);
  });

  it('refuses a media larger than the limit of its type from the size Meta announces (as a string or a number), without downloading it', async () => {
    for (const fileSize of [String(6 * 1024 * 1024), 6 * 1024 * 1024]) {
      // Prepare
      const { baseUrl, requests } = await fakeGraph((_request, origin) => ({
        status: 200,
        body: JSON.stringify(metaFixture('retrieve-media-url-response', { '<URL>': `${origin}/media`, '<MIME_TYPE>': 'image/jpeg', '<HASH>': hash, '<FILE_SIZE>': fileSize, '<MEDIA_ID>': '42' })),
      }));

      // Act
      const refused = await new GraphApiMessaging(baseUrl).downloadMedia({ phoneNumberId: '1', accessToken: token, mediaId: '42', maxBytes: 5 * 1024 * 1024 }).catch((error: unknown) => error);

      // Assess
      expect(refused).toBeInstanceOf(GraphApiError);
      expect(refused).toMatchObject({ code: 'WHATSAPP_MEDIA_TOO_LARGE', retryable: false });
      expect(requests).toHaveLength(1);
      await closeServer(graph!.server);
      graph = undefined;
    }
  });

  it('stops a download that grows past the limit though Meta announced less', async () => {
    // Prepare
    const { baseUrl } = await fakeGraph(({ path }, origin) =>
      path === '/v23.0/42'
        ? { status: 200, body: JSON.stringify(metaFixture('retrieve-media-url-response', { '<URL>': `${origin}/media`, '<MIME_TYPE>': 'image/webp', '<HASH>': hash, '<FILE_SIZE>': '100', '<MEDIA_ID>': '42' })) }
        : { status: 200, body: Buffer.alloc(600 * 1024), type: 'image/webp' },
    );

    // Act, Assess
    await expect(new GraphApiMessaging(baseUrl).downloadMedia({ phoneNumberId: '1', accessToken: token, mediaId: '42', maxBytes: 500 * 1024 })).rejects.toMatchObject({ code: 'WHATSAPP_MEDIA_TOO_LARGE' });
  });

  it('sends a template message with exactly the body Meta documents, and reads the wamid and the resolved WhatsApp id of its answer', async () => {
    // Prepare
    const { baseUrl, requests } = await fakeGraph(() => ({ status: 200, body: JSON.stringify(metaFixture('send-template-response', { PHONE_NUMBER: '+16505551234', WHATSAPP_ID: '16505551234', 'wamid.ID': 'wamid.HBgLMTY1MDUwNzY1MjAVAgARGBI5QTNDQTVCM0Q0Q0Q2RTY3RTcA' })) }));
    const template = { name: 'order_update', language: { code: 'en_US' }, components: [{ type: 'body', parameters: [{ type: 'text', text: 'Ana' }, { type: 'text', text: 'A-1001' }] }] };

    // Act
    const sent = await new GraphApiMessaging(baseUrl).sendTemplate({ phoneNumberId: '106540352242922', accessToken: token, to: { waId: '+16505551234' }, template });

    // Assess
    expect(sent).toEqual({ wamid: 'wamid.HBgLMTY1MDUwNzY1MjAVAgARGBI5QTNDQTVCM0Q0Q0Q2RTY3RTcA', waId: '16505551234' });
    const [request] = requests;
    expect([request?.method, request?.url, request?.headers.authorization, request?.headers['content-type']]).toEqual(['POST', '/v23.0/106540352242922/messages', `Bearer ${token}`, 'application/json']);
    expect(JSON.parse(request!.body)).toEqual(
      metaFixture('send-template-request', { PHONE_NUMBER: '+16505551234', TEMPLATE_NAME: 'order_update', LANGUAGE_AND_LOCALE_CODE: 'en_US', TEXT_STRING_1: 'Ana', TEXT_STRING_2: 'A-1001' }),
    );
  });

  it('addresses a customer known only by their business-scoped user id by `recipient`, and one with a phone number by `to` alone', async () => {
    // Prepare
    const { baseUrl, requests } = await fakeGraph(({ body }) => {
      const sent = JSON.parse(body) as { to?: string; recipient?: string };
      const contact = sent.to ? { input: sent.to, wa_id: sent.to } : { input: sent.recipient, user_id: sent.recipient };
      return { status: 200, body: JSON.stringify({ messaging_product: 'whatsapp', contacts: [contact], messages: [{ id: 'wamid.HBgLMTY1MDUwNzY1MjAVAgARGBI5QTNDQTVCM0Q0Q0Q2RTY3RTcA' }] }) };
    });
    const client = new GraphApiMessaging(baseUrl);

    // Act
    await client.sendTemplate({ phoneNumberId: '1', accessToken: token, to: { userId: 'US.13491208655302741918' }, template: { name: 'hello_world', language: { code: 'en_US' } } });
    await client.sendText({ phoneNumberId: '1', accessToken: token, to: { waId: '16505551234', userId: 'US.13491208655302741918' }, body: 'Hello' });

    // Assess
    const [template, text] = requests.map((request) => JSON.parse(request.body) as Record<string, unknown>);
    expect(template).toMatchObject({ recipient: 'US.13491208655302741918', type: 'template' });
    expect(template).not.toHaveProperty('to');
    expect(text).toMatchObject({ to: '16505551234', type: 'text' });
    expect(text).not.toHaveProperty('recipient');
  });

  it("reads Meta's template error as a refusal no retry gets past, with Meta's code and details in the message", async () => {
    // Prepare
    const { baseUrl } = await fakeGraph(() => ({ status: 400, body: JSON.stringify(metaFixture('error-template-name-does-not-exist', { TEMPLATE_NAME: 'order_updat', LANGUAGE_AND_LOCALE_CODE: 'en_US' })) }));

    // Act
    const refused = await new GraphApiMessaging(baseUrl)
      .sendTemplate({ phoneNumberId: '1', accessToken: token, to: { waId: '16505551234' }, template: { name: 'order_updat', language: { code: 'en_US' } } })
      .catch((error: unknown) => error);

    // Assess
    expect(refused).toBeInstanceOf(GraphApiError);
    expect(refused).toMatchObject({ code: 'WHATSAPP_TEMPLATE_REJECTED', retryable: false });
    expect((refused as Error).message).toContain('(code 132001): (#132001) Template name does not exist in the translation (template name (order_updat) does not exist in en_US)');
  });

  it('reads 131047 in an answer as the window closed, and a 5xx as worth a retry', async () => {
    // Prepare
    let status = 400;
    const { baseUrl } = await fakeGraph(() =>
      status === 400
        ? { status, body: JSON.stringify({ error: { message: '(#131047) Re-engagement message', type: 'OAuthException', code: 131047, error_data: { messaging_product: 'whatsapp', details: 'Message failed to send because more than 24 hours have passed since the customer last replied to this number.' } } }) }
        : { status, body: JSON.stringify({ error: { message: 'Something went wrong', code: 131000 } }) },
    );
    const client = new GraphApiMessaging(baseUrl);
    const send = () => client.sendText({ phoneNumberId: '1', accessToken: token, to: { waId: '16505551234' }, body: 'Hello' }).catch((error: unknown) => error);

    // Act
    const windowClosed = await send();
    status = 503;
    const unavailable = await send();

    // Assess
    expect(windowClosed).toMatchObject({ code: 'WHATSAPP_WINDOW_CLOSED', retryable: false });
    expect(unavailable).toMatchObject({ code: 'WHATSAPP_UNAVAILABLE', retryable: true });
  });
});

describe('the WhatsApp simulator, as strict as Graph', () => {
  it("serves a customer's media to the number's token only, through a URL that expires after 5 minutes", async () => {
    const simulator = await startWhatsappSimulator({ apiBaseUrl: 'http://127.0.0.1:9' });
    try {
      const client = new GraphApiMessaging(simulator.graphApiUrl);
      const { id, sha256 } = simulator.uploadMedia('1055501', { body: jpeg, mimeType: 'image/jpeg' });
      const request = { phoneNumberId: '1055501', accessToken: simulatorDefaults.accessToken, mediaId: id, maxBytes: 5 * 1024 * 1024 };

      const media = await client.downloadMedia(request);
      expect({ ...media, body: Buffer.from(media.body) }).toEqual({ body: jpeg, mimeType: 'image/jpeg', sha256 });
      await expect(client.downloadMedia({ ...request, accessToken: 'EAA-someone-else' })).rejects.toMatchObject({ code: 'WHATSAPP_CREDENTIALS_REJECTED' });
      await expect(client.downloadMedia({ ...request, phoneNumberId: '1055502' })).rejects.toMatchObject({ code: 'WHATSAPP_MEDIA_UNAVAILABLE', retryable: false });

      const lookup = await fetch(`${simulator.graphApiUrl}/${id}`, { headers: { authorization: `Bearer ${simulatorDefaults.accessToken}` } });
      const { url } = (await lookup.json()) as { url: string };
      expect((await fetch(url)).status).toBe(401);
      vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 5 * 60 * 1000 + 1000 });
      expect((await fetch(url, { headers: { authorization: `Bearer ${simulatorDefaults.accessToken}` } })).status).toBe(404);
    } finally {
      vi.useRealTimers();
      await simulator.stop();
    }
  });
});

