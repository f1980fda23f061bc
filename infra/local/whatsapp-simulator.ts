import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import WebSocket, { WebSocketServer } from 'ws';
import { whatsappTextLimit } from '../../shared/whatsapp/whatsapp-schemas.ts';
import { metaSignature } from '../../shared/whatsapp/meta-signature.ts';
import { denyEgressTo } from './environment.ts';
import { json, readText } from './twilio-simulator.ts';

/** The Graph API version the simulator answers under, as Meta's URLs carry one. */
export const graphApiVersion = 'v23.0';

/**
 * The secrets a number has at the simulator unless registered with others: connect a number with these
 * (docs/whatsapp.md#simulator) and the simulator's webhooks verify, and its Graph API takes the token.
 */
export const simulatorDefaults = { accessToken: 'local-whatsapp-access-token', appSecret: 'local-whatsapp-app-secret', verifyToken: 'local-whatsapp-verify-token' } as const;

/** A message the platform sent through the simulated Graph API. */
export interface OutboundWhatsapp {
  phoneNumberId: string;
  /** The customer it went to: the phone number of `to`, or the business-scoped user id of `recipient`. */
  to: string;
  addressedBy: 'to' | 'recipient';
  body: string;
  wamid: string;
  /** When it was accepted (epoch ms, and `performance.now()` for latency figures). */
  at: number;
  atMonotonic: number;
}

/** A notification the simulator posted to the platform: kept so tests can replay or alter it (Meta retries). */
export interface PostedNotification {
  phoneNumberId: string;
  body: string;
  signature: string;
  status: number;
  /** `performance.now()` when it was sent and when the platform answered. */
  sentAt: number;
  answeredAt: number;
}

export interface CustomerMessage {
  phoneNumberId: string;
  /** The customer's phone number (`wa_id`, `from`); leave it out for a user who shares only their BSUID. */
  from?: string;
  /** The customer's business-scoped user id (`user_id`, `from_user_id`), such as `US.13491208655302741918`. */
  userId?: string;
  name?: string;
  /** The customer's WhatsApp username, when they adopted one. */
  username?: string;
  text?: string;
  /** `text` by default; anything else (`image`, `audio`, `sticker`, `location`) carries no text. */
  type?: string;
  /** Meta's message id; a fresh one by default. */
  id?: string;
  /** Epoch seconds of the customer's message (now by default): older than 24 hours, the window is closed. */
  timestamp?: number;
}

export interface WhatsappSimulator {
  baseUrl: string;
  /** What the platform's Graph API client is pointed at: `<baseUrl>/v23.0`. */
  graphApiUrl: string;
  port: number;
  /** Gives a number other secrets than `simulatorDefaults`. */
  registerNumber(phoneNumberId: string, secrets: { accessToken?: string; appSecret?: string }): void;
  /** A customer writes to a business number: Meta's notification, signed, posted to the number's webhook. */
  customerSays(message: CustomerMessage): Promise<PostedNotification & { wamid: string }>;
  /** Posts a body as Meta would, with the signature given (or none), to a number's webhook. */
  post(phoneNumberId: string, body: string, signature: string | undefined): Promise<PostedNotification>;
  /** Builds the notification of a customer message (to alter, replay or reorder before posting it). */
  notificationOf(message: CustomerMessage): { body: string; wamid: string };
  /** Signs a body with a number's app secret. */
  sign(phoneNumberId: string, body: string): string;
  /** Posts the status notification of a sent message (`delivered`, `read`, `failed`…). */
  reportStatus(wamid: string, status: string): Promise<PostedNotification>;
  /** The next `count` sends from this number answer 500 (Meta's code 131000, retryable), or the status given. */
  failNextSends(phoneNumberId: string, count: number, status?: number): void;
  /** Whether sent messages get `sent` and `delivered` notifications (default true). */
  reportStatuses: boolean;
  sent: OutboundWhatsapp[];
  /** Every send attempt, accepted or not. */
  attempts: { phoneNumberId: string; to: string; status: number }[];
  notifications: PostedNotification[];
  stop(): Promise<void>;
}

interface NumberAtMeta {
  accessToken: string;
  appSecret: string;
}

/**
 * A local WhatsApp Business Cloud API that speaks Meta's wire protocol: the Graph API's `POST /{version}/{phone
 * number id}/messages` (bearer token, Meta's error shape), and webhook notifications of customer messages and
 * delivery statuses, signed with `X-Hub-Signature-256` under the number's app secret, posted to
 * `<apiBaseUrl>/whatsapp/webhook/<phone number id>`. As Meta does, its notifications write every character outside
 * ASCII as a `\uXXXX` escape (the signature covers the escaped text), customers may be known by their
 * business-scoped user id alone (no `wa_id`, no `from`), and a send is addressed by `to` (a phone number) or
 * `recipient` (a BSUID), anything else refused. `npm run whatsapp` chats through its WebSocket
 * `/simulator/customer?number=<phone number id>&wa_id=<customer>` (or `&user_id=<BSUID>`).
 */
export async function startWhatsappSimulator(options: { apiBaseUrl: string; host?: string; port?: number }): Promise<WhatsappSimulator> {
  const host = options.host ?? '127.0.0.1';
  const numbers = new Map<string, NumberAtMeta>();
  const failures = new Map<string, { count: number; status: number }>();
  const sent: OutboundWhatsapp[] = [];
  const attempts: { phoneNumberId: string; to: string; status: number }[] = [];
  const notifications: PostedNotification[] = [];
  /** Terminal customers by `<phone number id>/<wa_id>`: they receive what the platform sends them. */
  const customers = new Map<string, Set<WebSocket>>();

  const numberAt = (phoneNumberId: string): NumberAtMeta => numbers.get(phoneNumberId) ?? { ...simulatorDefaults };
  const sign = (phoneNumberId: string, body: string) => metaSignature(numberAt(phoneNumberId).appSecret, body);
  const newWamid = () => `wamid.${randomBytes(24).toString('base64url')}`;

  const post = async (phoneNumberId: string, body: string, signature: string | undefined): Promise<PostedNotification> => {
    const sentAt = performance.now();
    let status = 0;
    try {
      const response = await fetch(`${options.apiBaseUrl}/whatsapp/webhook/${phoneNumberId}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(signature === undefined ? {} : { 'x-hub-signature-256': signature }) },
        body,
      });
      await response.arrayBuffer();
      status = response.status;
    } catch {
      status = 0;
    }
    const posted = { phoneNumberId, body, signature: signature ?? '', status, sentAt, answeredAt: performance.now() };
    notifications.push(posted);
    return posted;
  };

  /** Phone numbers and BSUIDs of the customers who gave both, either way: Meta's contact book. */
  const knownUsers = new Map<string, string>();

  const envelope = (phoneNumberId: string, value: Record<string, unknown>) =>
    escapeUnicode(JSON.stringify({
      object: 'whatsapp_business_account',
      entry: [
        {
          id: 'WABA_LOCAL',
          changes: [{ field: 'messages', value: { messaging_product: 'whatsapp', metadata: { display_phone_number: '15550000000', phone_number_id: phoneNumberId }, ...value } }],
        },
      ],
    }));

  const notificationOf = (message: CustomerMessage): { body: string; wamid: string } => {
    const wamid = message.id ?? newWamid();
    const type = message.type ?? 'text';
    const content = type === 'text' ? { text: { body: message.text ?? '' } } : { [type]: type === 'location' ? { latitude: 52.37, longitude: 4.89 } : { id: randomBytes(8).toString('hex'), mime_type: 'application/octet-stream' } };
    if (!message.from && !message.userId) throw new Error('A customer has a phone number, a business-scoped user id, or both');
    if (message.from && message.userId) {
      knownUsers.set(message.from, message.userId);
      knownUsers.set(message.userId, message.from);
    }
    const profile = { name: message.name ?? 'Local customer', ...(message.username ? { username: message.username } : {}) };
    const body = envelope(message.phoneNumberId, {
      contacts: [{ profile, ...(message.from ? { wa_id: message.from } : {}), ...(message.userId ? { user_id: message.userId } : {}) }],
      messages: [
        {
          ...(message.from ? { from: message.from } : {}),
          ...(message.userId ? { from_user_id: message.userId } : {}),
          id: wamid,
          timestamp: String(message.timestamp ?? Math.floor(Date.now() / 1000)),
          type,
          ...content,
        },
      ],
    });
    return { body, wamid };
  };

  const reportStatus = (wamid: string, status: string): Promise<PostedNotification> => {
    const message = sent.find((candidate) => candidate.wamid === wamid);
    if (!message) throw new Error(`The simulator sent no message ${wamid}`);
    const errors = status === 'failed' ? { errors: [{ code: 131026, title: 'Message undeliverable', message: 'Message undeliverable' }] } : {};
    // A send to a phone number names it (and the user's BSUID when known); a send to a BSUID names only that.
    const recipient =
      message.addressedBy === 'to'
        ? { recipient_id: message.to, ...(knownUsers.has(message.to) ? { recipient_user_id: knownUsers.get(message.to) } : {}) }
        : { recipient_user_id: message.to };
    const body = envelope(message.phoneNumberId, {
      statuses: [{ id: wamid, status, timestamp: String(Math.floor(Date.now() / 1000)), ...recipient, ...errors }],
    });
    return post(message.phoneNumberId, body, sign(message.phoneNumberId, body));
  };

  const simulator: WhatsappSimulator = {
    baseUrl: '',
    graphApiUrl: '',
    port: 0,
    registerNumber: (phoneNumberId, secrets) => numbers.set(phoneNumberId, { ...numberAt(phoneNumberId), ...secrets }),
    customerSays: async (message) => {
      const { body, wamid } = notificationOf(message);
      return { ...(await post(message.phoneNumberId, body, sign(message.phoneNumberId, body))), wamid };
    },
    post,
    notificationOf,
    sign,
    reportStatus,
    failNextSends: (phoneNumberId, count, status = 500) => failures.set(phoneNumberId, { count, status }),
    reportStatuses: true,
    sent,
    attempts,
    notifications,
    stop: async () => {
      for (const client of sockets.clients) client.terminate();
      await new Promise<void>((resolve) => sockets.close(() => resolve()));
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  const graphError = (response: ServerResponse, status: number, code: number, message: string) =>
    json(response, status, { error: { message, type: status === 401 ? 'OAuthException' : 'GraphMethodException', code, fbtrace_id: randomBytes(8).toString('hex') } });

  async function sendMessage(request: IncomingMessage, response: ServerResponse, phoneNumberId: string): Promise<void> {
    const payload = parse(await readText(request)) as { messaging_product?: string; to?: string; recipient?: string; type?: string; text?: { body?: string } } | undefined;
    // `to` takes a phone number and wins over `recipient`, which takes a business-scoped user id.
    const addressedBy = payload?.to !== undefined ? 'to' : 'recipient';
    const to = payload?.to ?? payload?.recipient ?? '';
    const answer = (status: number, send: () => void) => {
      attempts.push({ phoneNumberId, to, status });
      send();
    };
    if (request.headers.authorization !== `Bearer ${numberAt(phoneNumberId).accessToken}`) {
      return answer(401, () => graphError(response, 401, 190, 'Invalid OAuth access token - Cannot parse access token'));
    }
    const body = payload?.text?.body;
    const addressed = addressedBy === 'to' ? phoneNumber.test(to) : businessScopedUserId.test(to);
    if (payload?.messaging_product !== 'whatsapp' || !addressed || payload.type !== 'text' || typeof body !== 'string' || body.length === 0 || body.length > whatsappTextLimit) {
      return answer(400, () => graphError(response, 400, 100, '(#100) Invalid parameter'));
    }
    const failure = failures.get(phoneNumberId);
    if (failure && failure.count > 0) {
      failure.count -= 1;
      return answer(failure.status, () => graphError(response, failure.status, 131000, 'Something went wrong'));
    }
    const message: OutboundWhatsapp = { phoneNumberId, to, addressedBy, body, wamid: newWamid(), at: Date.now(), atMonotonic: performance.now() };
    sent.push(message);
    const contact = addressedBy === 'to' ? { input: to, wa_id: to } : { input: to, user_id: to };
    answer(200, () => json(response, 200, { messaging_product: 'whatsapp', contacts: [contact], messages: [{ id: message.wamid }] }));
    for (const socket of customers.get(`${phoneNumberId}/${to}`) ?? []) socket.send(JSON.stringify({ type: 'message', text: body }));
    if (simulator.reportStatuses) {
      // As Meta does, a moment after the send: `sent`, then `delivered`.
      setTimeout(() => void reportStatus(message.wamid, 'sent').then(() => reportStatus(message.wamid, 'delivered')), 20).unref();
    }
  }

  const server: Server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://simulator');
    const messages = new RegExp(`^/${graphApiVersion.replace('.', '\\.')}/(\\d+)/messages$`).exec(url.pathname);
    if (request.method === 'POST' && messages) {
      sendMessage(request, response, messages[1] as string).catch(() => graphError(response, 500, 1, 'An unknown error occurred'));
      return;
    }
    graphError(response, 404, 803, 'Unknown path components');
  });

  // `npm run whatsapp`: one WebSocket per terminal customer; `{type:'say', text}` in, `{type:'message', text}` out.
  const sockets = new WebSocketServer({ noServer: true });
  server.on('upgrade', (request, socket, head) => {
    const url = new URL(request.url ?? '/', 'http://simulator');
    const number = url.searchParams.get('number');
    const userId = url.searchParams.get('user_id') ?? undefined;
    const waId = url.searchParams.get('wa_id') ?? undefined;
    const customer = userId ?? waId;
    if (url.pathname !== '/simulator/customer' || !number || !customer) {
      socket.destroy();
      return;
    }
    sockets.handleUpgrade(request, socket, head, (client) => {
      // What the platform sends to the customer arrives addressed to their phone number, or to their BSUID alone.
      const key = `${number}/${waId ?? userId}`;
      const attached = customers.get(key) ?? new Set();
      attached.add(client);
      customers.set(key, attached);
      client.on('close', () => attached.delete(client));
      client.on('message', async (data) => {
        const said = parse(data.toString()) as { type?: string; text?: string; media?: string } | undefined;
        if (said?.type !== 'say') return;
        const sender = { ...(waId ? { from: waId } : {}), ...(userId ? { userId } : {}) };
        const posted = await simulator.customerSays({ phoneNumberId: number, ...sender, ...(said.media ? { type: said.media } : { text: said.text ?? '' }) });
        client.send(JSON.stringify({ type: 'posted', status: posted.status, wamid: posted.wamid }));
      });
      client.send(JSON.stringify({ type: 'ready' }));
    });
  });

  await new Promise<void>((resolve) => server.listen(options.port ?? 0, host, resolve));
  const address = server.address();
  simulator.port = typeof address === 'object' && address ? address.port : 0;
  simulator.baseUrl = `http://${host}:${simulator.port}`;
  simulator.graphApiUrl = `${simulator.baseUrl}/${graphApiVersion}`;
  return simulator;
}

/**
 * WhatsApp on this machine: the simulator, wired through the variables the handlers read on AWS too (call before
 * they read their configuration). `apiBaseUrl` is where its webhooks go; tools and webhooks cannot reach it.
 * Addresses the environment names already win: with WHATSAPP_GRAPH_API_URL set (the real Graph API, or another
 * test double) no simulator starts, and a set PUBLIC_BASE_URL (the tunnel Meta posts to) is kept.
 */
export async function startLocalWhatsapp(apiBaseUrl: string, env: NodeJS.ProcessEnv = process.env, options: { port?: number | undefined } = {}): Promise<WhatsappSimulator | undefined> {
  env.PUBLIC_BASE_URL ??= apiBaseUrl;
  if (env.WHATSAPP_GRAPH_API_URL) return undefined;
  const simulator = await startWhatsappSimulator({ apiBaseUrl, port: options.port });
  denyEgressTo(simulator.port, env);
  env.WHATSAPP_GRAPH_API_URL = simulator.graphApiUrl;
  return simulator;
}

/** What a phone number in `to` looks like (digits, a leading `+` allowed), and a business-scoped user id (`US.1349…`, `US.ENT.1181…`). */
const phoneNumber = /^\+?\d{6,20}$/;
const businessScopedUserId = /^[A-Z]{2}\.(ENT\.)?[A-Za-z0-9]{1,128}$/;

/**
 * JSON as Meta writes its notifications: every character outside ASCII as a `\uXXXX` escape with lowercase hex
 * (surrogate pairs for emoji), which is the text the signature is computed over
 * (https://developers.facebook.com/docs/graph-api/webhooks/getting-started#validate-payloads).
 */
export function escapeUnicode(json: string): string {
  return json.replace(/[^\x00-\x7f]/g, (unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
