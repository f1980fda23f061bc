import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { modelId } from '../../shared/models/model-catalog.ts';
import { expectError, startApi, type TestApi } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';
import { startOpenAIStub, stubText, type OpenAIStub } from '../support/openai-stub.ts';
import { customerSessions, messagesOf, metaFixture, repliesTo, uniqueCustomer, uniqueUserId, whatsappOrg, type WhatsappOrg } from '../support/whatsapp.ts';

let api: TestApi;
let provider: OpenAIStub;

beforeAll(async () => {
  // A provider with an image model, a text-only model and a speech-to-text model, speaking OpenAI's wire format.
  provider = await startOpenAIStub({ tokens: 3, transcript: (bytes, filename) => `Please move my booking to Friday (${bytes.length} bytes, ${filename})` });
  api = await startApi(
    {
      WHATSAPP_SEND_RETRY_MS: '10,20,30',
      OPENAI_COMPATIBLE_BASE_URL: provider.baseUrl,
      OPENAI_COMPATIBLE_MODELS: 'vision-model,text-model',
      OPENAI_COMPATIBLE_STT_MODELS: 'whisper-1',
      IMAGE_INPUT_MODELS: 'openai-compatible/vision-model',
    },
    { queues: { visibilityTimeoutSeconds: 2 }, whatsapp: true },
  );
  // Loads the agents' and numbers' handlers (a cold start takes 20 s on a busy machine) outside the tests' time limit.
  await whatsappOrg(api);
});
afterAll(async () => {
  await api.close();
  await provider.close();
});

const simulator = () => api.whatsapp!;
const jpeg = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(1500, 9)]);

/** The customer's one session and its messages, once the reply's sends are recorded. */
async function transcriptOf(org: WhatsappOrg, customer: string): Promise<{ session: any; messages: any[] }> {
  const [session] = await eventually(() => customerSessions(api, org, customer), (found) => found.length === 1);
  const messages = await eventually(() => messagesOf(api, org, session.id), (found) => Boolean(found.at(-1)?.metadata.whatsapp?.sends));
  return { session, messages };
}

async function useModel(org: WhatsappOrg, name: string): Promise<void> {
  const changed = await api.request('PATCH', `/v2/chat/agents/${org.agentId}`, { key: org.key, body: { modelId: modelId('openai-compatible', 'LLM', name) } });
  expect(changed.status, changed.text).toBe(200);
}

describe("a WhatsApp customer's media", () => {
  it('downloads an image with the bearer token, keeps it under the session, and the built-in model acknowledges it', async () => {
    const org = await whatsappOrg(api);
    const customer = uniqueCustomer();
    const said = await simulator().customerSays({ phoneNumberId: org.phoneNumberId, from: customer, type: 'image', file: { body: jpeg, mimeType: 'image/jpeg' }, caption: 'Is this scratch covered?' });

    const [reply] = await repliesTo(simulator(), org, customer, 1);
    expect(reply).toBe(
      `I received your image (image/jpeg, ${jpeg.length} bytes) with the text "[image: Is this scratch covered?]". I am the built-in offline model and cannot look at images; connect a provider model that accepts images for real answers.`,
    );
    const { session, messages } = await transcriptOf(org, customer);
    expect(messages[0]).toMatchObject({
      role: 'USER',
      content: '[image: Is this scratch covered?]',
      metadata: { whatsapp: { type: 'image', media: { id: said.mediaId, mimeType: 'image/jpeg', bytes: jpeg.length, caption: 'Is this scratch covered?', stored: true } } },
    });
    expect(simulator().mediaRequests.filter((request) => request.mediaId === said.mediaId)).toEqual([
      { kind: 'lookup', mediaId: said.mediaId, status: 200 },
      { kind: 'download', mediaId: said.mediaId, status: 200 },
    ]);

    // The copy kept: a 302 to a short-lived URL that serves the same bytes; nobody else's.
    const link = await api.request('GET', `/v1/chat/sessions/${session.id}/media/${said.mediaId}`, { key: org.key });
    expect(link.status, link.text).toBe(302);
    const download = await fetch(link.headers.get('location')!);
    expect(Buffer.from(await download.arrayBuffer())).toEqual(jpeg);
    expectError(await api.request('GET', `/v1/chat/sessions/${session.id}/media/999999`, { key: org.key }), 404, 'NOT_FOUND');
    const other = await api.newOrg();
    expectError(await api.request('GET', `/v1/chat/sessions/${session.id}/media/${said.mediaId}`, { key: other.key }), 404, 'SESSION_NOT_FOUND');
  });

  it('reads the media of a customer known only by their business-scoped user id, and answers them by `recipient`', async () => {
    const org = await whatsappOrg(api);
    const userId = uniqueUserId();
    const voice = Buffer.concat([Buffer.from('OggS'), Buffer.alloc(900, 2)]);
    const said = await simulator().customerSays({ phoneNumberId: org.phoneNumberId, userId, username: '@ana', type: 'audio', file: { body: voice, mimeType: 'audio/ogg; codecs=opus' } });

    const words = `Please move my booking to Friday (${voice.length} bytes, voice-note.ogg)`;
    expect(await repliesTo(simulator(), org, userId, 1)).toEqual([`You said: "[voice note] ${words}". I am the built-in offline model; connect a provider model for real answers.`]);
    expect(simulator().sent.filter((message) => message.to === userId).map((message) => message.addressedBy)).toEqual(['recipient']);
    const [session] = await eventually(
      async () => (await api.request('GET', '/v1/chat/chat/sessions?platform=WHATSAPP&limit=100', { key: org.key })).body.data as any[],
      (found) => found.length === 1,
    );
    expect(session.metadata.whatsapp).toEqual({ numberId: org.numberId, phoneNumberId: org.phoneNumberId, customerUserId: userId, customerName: 'Local customer', customerUsername: '@ana' });
    // Inside the window Meta keeps for the BSUID: the reply is delivered, not failed with 131047.
    const messages = await eventually(() => messagesOf(api, org, session.id), (found) => found.at(-1)?.metadata.whatsapp?.sends?.[0]?.status === 'delivered');
    expect(messages[0]).toMatchObject({ content: `[voice note] ${words}`, metadata: { whatsapp: { type: 'audio', media: { id: said.mediaId, stored: true, transcribedBy: 'openai-compatible/whisper-1' } } } });
    const link = await api.request('GET', `/v1/chat/sessions/${session.id}/media/${said.mediaId}`, { key: org.key });
    expect(Buffer.from(await (await fetch(link.headers.get('location')!)).arrayBuffer())).toEqual(voice);
  });

  it('passes the image to a model that accepts images, and only its placeholder to one that does not', async () => {
    const org = await whatsappOrg(api);
    const seen = async (model: string, customer: string) => {
      await useModel(org, model);
      const before = provider.requests.length;
      await simulator().customerSays({ phoneNumberId: org.phoneNumberId, from: customer, type: 'image', file: { body: jpeg, mimeType: 'image/jpeg' }, caption: 'My receipt' });
      expect(await repliesTo(simulator(), org, customer, 1)).toEqual([stubText(3)]);
      const request = provider.requests.slice(before).find((candidate) => candidate.body.model === model)!;
      return request.body.messages.at(-1);
    };

    expect(await seen('vision-model', uniqueCustomer())).toEqual({
      role: 'user',
      content: [
        { type: 'image_url', image_url: { url: `data:image/jpeg;base64,${jpeg.toString('base64')}` } },
        { type: 'text', text: '[image: My receipt]' },
      ],
    });
    expect(await seen('text-model', uniqueCustomer())).toEqual({ role: 'user', content: '[image: My receipt]' });
  });

  it("transcribes a voice note with the deployment's speech-to-text model, and the agent answers its words", async () => {
    const org = await whatsappOrg(api);
    const customer = uniqueCustomer();
    const voice = Buffer.concat([Buffer.from('OggS'), Buffer.alloc(2000, 1)]);
    await simulator().customerSays({ phoneNumberId: org.phoneNumberId, from: customer, type: 'audio', file: { body: voice, mimeType: 'audio/ogg; codecs=opus' } });

    const words = `Please move my booking to Friday (${voice.length} bytes, voice-note.ogg)`;
    expect(await repliesTo(simulator(), org, customer, 1)).toEqual([`You said: "[voice note] ${words}". I am the built-in offline model; connect a provider model for real answers.`]);
    const { messages } = await transcriptOf(org, customer);
    expect(messages[0]).toMatchObject({
      content: `[voice note] ${words}`,
      metadata: { whatsapp: { type: 'audio', media: { voice: true, mimeType: 'audio/ogg; codecs=opus', bytes: voice.length, stored: true, transcribedBy: 'openai-compatible/whisper-1' } } },
    });
    expect(provider.requests.filter((request) => request.path === '/v1/audio/transcriptions').at(-1)?.body).toEqual({ model: 'whisper-1', filename: 'voice-note.ogg', bytes: voice.length });
  });

  it("keeps a document and tells the agent its name and caption; a file in a format the transcriber refuses says so", async () => {
    const org = await whatsappOrg(api);
    const customer = uniqueCustomer();
    const pdf = Buffer.from('%PDF-1.4\n% an invoice\n');
    const document = await simulator().customerSays({ phoneNumberId: org.phoneNumberId, from: customer, type: 'document', file: { body: pdf, mimeType: 'application/pdf', filename: 'invoice-2291.pdf' }, caption: 'Here is the invoice' });
    await repliesTo(simulator(), org, customer, 1);
    await simulator().customerSays({ phoneNumberId: org.phoneNumberId, from: customer, type: 'audio', voice: false, file: { body: Buffer.alloc(100, 3), mimeType: 'audio/amr' } });
    await repliesTo(simulator(), org, customer, 2);

    const { session, messages } = await transcriptOf(org, customer);
    const users = messages.filter((message) => message.role === 'USER');
    expect(users.map((message) => message.content)).toEqual(['[document: invoice-2291.pdf — Here is the invoice]', '[audio: not transcribed, the transcription failed]']);
    expect(users[1].metadata.whatsapp.media).toMatchObject({ voice: false, stored: true, error: { code: 'TRANSCRIPTION_FAILED', message: expect.stringContaining('Invalid file format') } });
    const link = await api.request('GET', `/v1/chat/sessions/${session.id}/media/${document.mediaId}`, { key: org.key });
    expect(Buffer.from(await (await fetch(link.headers.get('location')!)).arrayBuffer())).toEqual(pdf);
  });

  it('retries a download Meta fails, then answers with the placeholder when it keeps failing; a file past its limit is not downloaded', async () => {
    const org = await whatsappOrg(api);
    const customer = uniqueCustomer();
    simulator().failNextDownloads(10, 503);
    const failing = await simulator().customerSays({ phoneNumberId: org.phoneNumberId, from: customer, type: 'image', caption: 'Blurry' });
    await repliesTo(simulator(), org, customer, 1);
    simulator().failNextDownloads(0);
    const large = await simulator().customerSays({ phoneNumberId: org.phoneNumberId, from: customer, type: 'sticker', file: { body: Buffer.alloc(500 * 1024 + 1), mimeType: 'image/webp' } });
    await repliesTo(simulator(), org, customer, 2);

    const { messages } = await transcriptOf(org, customer);
    const users = messages.filter((message) => message.role === 'USER');
    expect(users.map((message) => message.content)).toEqual(['[image: Blurry — could not be downloaded]', '[sticker: too large to read]']);
    expect(users[0].metadata.whatsapp.media).toMatchObject({ caption: 'Blurry', error: { code: 'WHATSAPP_UNAVAILABLE' } });
    expect(users[0].metadata.whatsapp.media.stored).toBeUndefined();
    expect(users[1].metadata.whatsapp.media.error.code).toBe('WHATSAPP_MEDIA_TOO_LARGE');
    const downloads = (mediaId: string | undefined) => simulator().mediaRequests.filter((request) => request.mediaId === mediaId).map((request) => `${request.kind} ${request.status}`);
    expect(downloads(failing.mediaId)).toEqual(['lookup 200', 'download 503', 'lookup 200', 'download 503', 'lookup 200', 'download 503', 'lookup 200', 'download 503']);
    expect(downloads(large.mediaId)).toEqual(['lookup 200']);
  });
});

describe("Meta's documented media notifications", () => {
  it('reads an image message as Meta documents it', async () => {
    const org = await whatsappOrg(api);
    const customer = uniqueCustomer();
    const { id, sha256 } = simulator().uploadMedia(org.phoneNumberId, { body: jpeg, mimeType: 'image/jpeg' });
    const body = JSON.stringify(
      metaFixture('webhook-image-message', {
        PHONE_NUMBER_ID: org.phoneNumberId,
        PHONE_NUMBER: customer,
        WHATSAPP_ID: customer,
        NAME: 'Sheena Nelson',
        TIMESTAMP: String(Math.floor(Date.now() / 1000)),
        'wamid.ID': `wamid.${crypto.randomUUID()}`,
        CAPTION: 'This is a caption',
        IMAGE_HASH: sha256,
        ID: id,
      }),
    );
    expect((await simulator().post(org.phoneNumberId, body, simulator().sign(org.phoneNumberId, body))).status).toBe(200);
    await repliesTo(simulator(), org, customer, 1);
    const { messages } = await transcriptOf(org, customer);
    expect(messages[0]).toMatchObject({ content: '[image: This is a caption]', metadata: { whatsapp: { type: 'image', media: { id, sha256, bytes: jpeg.length, stored: true } } } });
  });

  it.each([
    ['webhook-document-message', { '<MEDIA_ASSET_CAPTION>': 'Signed contract', '<MEDIA_ASSET_FILENAME>': 'contract.pdf', '<MEDIA_ASSET_MIME_TYPE>': 'application/pdf' }, '[document: contract.pdf — Signed contract]'],
    ['webhook-audio-message', { '<MEDIA_ASSET_MIME_TYPE>': 'audio/ogg; codecs=opus' }, '[voice note] Please move my booking to Friday (64 bytes, voice-note.ogg)'],
  ] as const)('reads %s as Meta documents it', async (fixture, fill, content) => {
    const org = await whatsappOrg(api);
    const customer = uniqueCustomer();
    const file = { body: Buffer.concat([Buffer.from('OggS'), Buffer.alloc(60)]), mimeType: fill['<MEDIA_ASSET_MIME_TYPE>'] };
    const { id, sha256 } = simulator().uploadMedia(org.phoneNumberId, file);
    const body = JSON.stringify(
      metaFixture(fixture, {
        '<WHATSAPP_BUSINESS_ACCOUNT_ID>': '102290129340398',
        '<BUSINESS_DISPLAY_PHONE_NUMBER>': '15550783881',
        '<BUSINESS_PHONE_NUMBER_ID>': org.phoneNumberId,
        '<WHATSAPP_USER_PROFILE_NAME>': 'Sheena Nelson',
        '<WHATSAPP_USER_ID>': customer,
        '<WHATSAPP_USER_PHONE_NUMBER>': customer,
        '<WHATSAPP_MESSAGE_ID>': `wamid.${crypto.randomUUID()}`,
        '<WEBHOOK_TRIGGER_TIMESTAMP>': String(Math.floor(Date.now() / 1000)),
        '<MEDIA_ASSET_SHA256_HASH>': sha256,
        '<MEDIA_ASSET_ID>': id,
        '<MEDIA_ASSET_URL>': 'https://lookaside.fbsbx.com/whatsapp_business/attachments/?mid=0',
        ...fill,
      }),
    );
    expect((await simulator().post(org.phoneNumberId, body, simulator().sign(org.phoneNumberId, body))).status).toBe(200);
    await repliesTo(simulator(), org, customer, 1);
    const { messages } = await transcriptOf(org, customer);
    expect(messages[0]).toMatchObject({ content, metadata: { whatsapp: { media: { id, stored: true } } } });
  });
});

/**
 * `npm run whatsapp` with `args`, attached to this file's simulator as to a running `npm start` (its running.json in a
 * scratch DATA_DIR, beside `files` by name); `use` types into it and reads what it printed so far.
 */
async function withWhatsappCli(
  args: string[],
  use: (cli: { type(line: string): void; output(): string; dataDir: string }) => Promise<void>,
  files: Record<string, Uint8Array> = {},
): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'whatsapp-cli-'));
  for (const [name, bytes] of Object.entries(files)) writeFileSync(join(dataDir, name), bytes);
  writeFileSync(join(dataDir, 'running.json'), JSON.stringify({ pid: process.pid, dynamodbEndpoint: '', tableName: '', whatsappSimulator: simulator().baseUrl }));
  const cli = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', 'infra/local/whatsapp-cli.ts', ...args], {
    cwd: resolve(import.meta.dirname, '../..'),
    env: { ...process.env, DATA_DIR: dataDir },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let output = '';
  cli.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  try {
    await use({ type: (line) => cli.stdin.write(`${line}\n`), output: () => output, dataDir });
  } finally {
    cli.stdin.end();
    cli.kill();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

describe('npm run whatsapp', () => {
  it('sends a file from the terminal as an image message with its caption, and prints the agent\'s answer', async () => {
    const org = await whatsappOrg(api);
    const customer = uniqueCustomer();
    await withWhatsappCli(
      ['--number', org.phoneNumberId, '--from', customer],
      async (cli) => {
        cli.type(`/image ${join(cli.dataDir, 'scratch.jpg')} Is this covered?`);
        const answered = await eventually(cli.output, (text) => text.includes('agent> '));
        expect(answered).toContain(`agent> I received your image (image/jpeg, ${jpeg.length} bytes) with the text "[image: Is this covered?]".`);
        const { messages } = await transcriptOf(org, customer);
        expect(messages[0].metadata.whatsapp.media).toMatchObject({ mimeType: 'image/jpeg', bytes: jpeg.length, caption: 'Is this covered?', stored: true });
      },
      { 'scratch.jpg': jpeg },
    );
  });

  it('makes you a user who shares only their business-scoped user id with --user-id, and sends a sample file of a type', async () => {
    const org = await whatsappOrg(api);
    const userId = uniqueUserId();
    await withWhatsappCli(['--number', org.phoneNumberId, '--user-id', userId], async (cli) => {
      cli.type('/document The sample');
      const answered = await eventually(cli.output, (text) => text.includes('agent> '));
      expect(answered).toContain(`You are WhatsApp user ${userId}`);
      expect(answered).toContain('agent> You said: "[document: sample.txt — The sample]".');
      expect(simulator().sent.filter((message) => message.to === userId).map((message) => message.addressedBy)).toEqual(['recipient']);
    });
  });
});
