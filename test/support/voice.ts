import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, expect } from 'vitest';
import { eventually } from './eventually.ts';
import { startApi, type TestApi } from './api.ts';
import { listenOnLoopback } from './loopback-server.ts';
import { Receiver, type Receipt } from './webhook-receiver.ts';

/** A Twilio account of a test organization: any SID and token; the simulator signs with the token it is given. */
export function twilioAccount() {
  return { accountSid: `AC${randomBytes(16).toString('hex')}`, authToken: randomBytes(16).toString('hex') };
}

/** A number no other test imports: numbers are unique worldwide. */
export const uniqueNumber = (): string => `+1999${String(Math.floor(Math.random() * 1e8)).padStart(8, '0')}`;

/** A weather API the agent's tool calls. */
export async function startWeatherApi(): Promise<{ url: string; server: Server }> {
  const server = createServer((_request, response) => response.writeHead(200, { 'content-type': 'application/json' }).end('{"tempC":21}'));
  const port = await listenOnLoopback(server);
  return { url: `http://127.0.0.1:${port}/weather`, server };
}

/** A `get_weather` API tool calling `url`; `extra` adds fields (a `preExecutionMessage`). Its id. */
export async function createWeatherTool(api: TestApi, key: string, url: string, extra: object = {}): Promise<string> {
  const tool = await api.request('POST', '/v1/chat/tools', {
    key,
    body: {
      name: 'get_weather',
      description: 'Current weather for a city',
      type: 'API_TOOL',
      ajvPropertiesSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      apiTool: { url, method: 'GET' },
      ...extra,
    },
  });
  expect(tool.status, tool.text).toBe(201);
  return tool.body.id;
}

export interface VoiceOrg {
  key: string;
  orgId: string;
  account: ReturnType<typeof twilioAccount>;
  agentId: string;
  phoneNumberId: string;
  phoneNumber: string;
  webhookPath: string;
}

/**
 * Puts `phoneNumber` in the Twilio account of the API's simulator (as a number bought in Twilio's console), so that it
 * can be imported.
 */
export function numberAtTwilio(api: TestApi, account: ReturnType<typeof twilioAccount>, phoneNumber = uniqueNumber()): string {
  if (!api.voice) throw new Error('numbers live in the Twilio simulator: start the API with { voice: true }');
  api.voice.simulator.addIncomingNumber({ ...account, phoneNumber });
  return phoneNumber;
}

/**
 * An organization ready to call: Twilio credentials, a voice agent (with a weather tool when `toolUrl` is given),
 * an imported number (routed to the API at the Twilio simulator), and a webhook endpoint receiving session events.
 */
export async function voiceOrg(api: TestApi, receiver: Receiver, receiverUrl: string, options: { toolUrl?: string; agent?: object } = {}): Promise<VoiceOrg> {
  const { key, orgId } = await api.newOrg();
  const account = twilioAccount();
  const credentials = await api.request('PUT', '/v1/chat/telephony/twilio', { key, body: account });
  expect(credentials.status, credentials.text).toBe(200);
  const tools = options.toolUrl ? [{ toolId: await createWeatherTool(api, key, options.toolUrl) }] : [];
  const agent = await api.request('POST', '/v2/chat/agents', {
    key,
    body: { fullName: 'Vox', description: 'Phone agent', role: 'You answer the phone for {{company}}.', voiceEnabled: true, voicePipelineMode: 'pipeline', tools, ...options.agent },
  });
  expect(agent.status, agent.text).toBe(201);
  const phoneNumber = numberAtTwilio(api, account);
  const number = await api.request('POST', '/api/v1/phone-numbers', { key, body: { phone_number: phoneNumber, label: 'Main line', agentId: agent.body.id } });
  expect(number.status, number.text).toBe(201);
  const webhookPath = `/ok/${crypto.randomUUID()}`;
  const endpoint = await api.request('POST', '/v1/chat/webhooks', { key, body: { url: receiverUrl + webhookPath, events: ['*'] } });
  expect(endpoint.status, endpoint.text).toBe(201);
  receiver.secrets.set(webhookPath, [endpoint.body.secret]);
  return { key, orgId, account, agentId: agent.body.id, phoneNumberId: number.body.id, phoneNumber, webhookPath };
}

/** The session events one organization's endpoint received, once `session.ended` is in and a moment more. */
export async function sessionEvents(receiver: Receiver, path: string, sessionId: string, settleMs = 500): Promise<Receipt[]> {
  const forSession = () => receiver.for(path).filter((receipt) => receipt.body.id === sessionId || receipt.body.data?.sessionId === sessionId);
  await eventually(forSession, (found) => found.some((receipt) => receipt.body.eventType === 'session.ended'));
  await new Promise((resolve) => setTimeout(resolve, settleMs));
  return [...new Map(forSession().map((receipt) => [receipt.webhookId, receipt])).values()];
}

/** Posts form fields to a carrier route as Twilio does, with the given `X-Twilio-Signature` (or none). */
export function postAsTwilio(url: string, params: Record<string, string>, signature?: string): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(signature === undefined ? {} : { 'x-twilio-signature': signature }) },
    body: new URLSearchParams(params).toString(),
  });
}

/**
 * The API of a test file about calls (queues, the table stream and the Twilio simulator running) and its webhook
 * receiver: started before the file's tests, closed after them.
 */
export function voiceTestApi() {
  const receiver = new Receiver();
  let api: TestApi | undefined;
  let receiverUrl = '';
  beforeAll(async () => {
    receiverUrl = await receiver.start();
    api = await startApi({}, { streamPoller: true, queues: true, voice: true });
  });
  afterAll(async () => {
    await api?.close();
    await receiver.close();
  });
  const started = (): TestApi => {
    if (!api) throw new Error('the API starts before the first test');
    return api;
  };
  return {
    receiver,
    get api(): TestApi {
      return started();
    },
    get receiverUrl(): string {
      return receiverUrl;
    },
    simulator: () => started().voice!.simulator,
  };
}

/** A message as the transcript lists it. */
interface TranscriptMessage {
  role: string;
  content: string;
  metadata: { interruption?: { spokenChars: number; unspoken: string; durationUntilInterruptMs: number } };
}

/**
 * Checks the transcript of a call whose callee asked something, spoke over the built-in model's echo of it, and said
 * goodbye: the echo cut where the callee spoke, the rest recorded apart. Returns the interruption.
 */
export function expectEchoCutShort(transcript: TranscriptMessage[]): NonNullable<TranscriptMessage['metadata']['interruption']> {
  expect(transcript.map((message) => message.role)).toEqual(['USER', 'ASSISTANT', 'USER', 'ASSISTANT']);
  const [asked, interrupted] = transcript as [TranscriptMessage, TranscriptMessage];
  const whole = `You said: "${asked.content}". I am the built-in offline model; connect a provider model for real answers.`;
  const interruption = interrupted.metadata.interruption;
  expect(interruption).toMatchObject({ spokenChars: interrupted.content.length, unspoken: expect.any(String), durationUntilInterruptMs: expect.any(Number) });
  expect(interrupted.content + interruption!.unspoken).toBe(whole);
  expect(interruption!.unspoken.length).toBeGreaterThan(0);
  return interruption!;
}
