import { createHash, createHmac, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import WebSocket, { WebSocketServer } from 'ws';
import { whatsappTextLimit } from '../../shared/whatsapp/whatsapp-schemas.ts';
import { metaSignature } from '../../shared/whatsapp/meta-signature.ts';
import { denyEgressTo } from './environment.ts';
import type { LocalQueues } from './queues.ts';
import { json, readText } from './twilio-simulator.ts';

/** The Graph API version the simulator answers under, as Meta's URLs carry one. */
export const graphApiVersion = 'v23.0';

/**
 * The secrets a number has at the simulator unless registered with others: connect a number with these
 * (docs/whatsapp.md#simulator) and the simulator's webhooks verify, and its Graph API takes the token.
 */
export const simulatorDefaults = { accessToken: 'local-whatsapp-access-token', appSecret: 'local-whatsapp-app-secret', verifyToken: 'local-whatsapp-verify-token' } as const;

/** WhatsApp's customer-service window: outside it Meta takes only template messages. */
const customerServiceWindowMs = 24 * 60 * 60 * 1000;
/** Meta's media URLs are valid for 5 minutes. */
const mediaUrlLifetimeMs = 5 * 60 * 1000;

/** A template as approved at Meta: its language and the body text with its parameters (`{{1}}`, or `{{first_name}}` for named ones). */
export interface ApprovedTemplate {
  name: string;
  language: string;
  body: string;
}

/**
 * The templates every number has at the simulator: Meta's sample `hello_world` (every new WhatsApp Business
 * Account has it), and one with positional and one with named body parameters.
 */
export const simulatorTemplates: readonly ApprovedTemplate[] = [
  { name: 'hello_world', language: 'en_US', body: 'Hello World' },
  { name: 'order_update', language: 'en_US', body: 'Hi {{1}}, your order {{2}} has shipped.' },
  { name: 'appointment_reminder', language: 'en_US', body: 'Hello {{first_name}}, see you on {{date}}. Reply to this message to change it.' },
];

/** A message the platform sent through the simulated Graph API. */
export interface OutboundWhatsapp {
  phoneNumberId: string;
  /** The customer it went to: the phone number of `to`, or the business-scoped user id of `recipient`. */
  to: string;
  addressedBy: 'to' | 'recipient';
  type: 'text' | 'template';
  /** The text, or the template's body with its parameters filled in. */
  body: string;
  /** A template message's `template` object as sent. */
  template?: { name: string; language: { code: string }; components?: unknown[] };
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

/** A file a customer sends: uploaded to the simulated Cloud API as Meta does with a customer's media. */
export interface CustomerFile {
  body: Uint8Array;
  mimeType: string;
  filename?: string;
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
  /**
   * `text` by default; `image`, `audio`, `video`, `document` and `sticker` carry a file (`file`, or a small sample
   * of the type), other types (`location`, `reaction`…) carry no text.
   */
  type?: string;
  file?: CustomerFile;
  /** An image's, video's or document's caption. */
  caption?: string;
  /** An audio recorded in WhatsApp (a voice note) rather than a file; true by default for `audio`. */
  voice?: boolean;
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
  /** Approves a template for every number (in addition to `simulatorTemplates`). */
  registerTemplate(template: ApprovedTemplate): void;
  /** A customer writes to a business number: Meta's notification, signed, posted to the number's webhook. */
  customerSays(message: CustomerMessage): Promise<PostedNotification & { wamid: string; mediaId?: string | undefined }>;
  /** Posts a body as Meta would, with the signature given (or none), to a number's webhook. */
  post(phoneNumberId: string, body: string, signature: string | undefined): Promise<PostedNotification>;
  /** Builds the notification of a customer message (to alter, replay or reorder before posting it); a file is uploaded now. */
  notificationOf(message: CustomerMessage): { body: string; wamid: string; mediaId?: string | undefined };
  /** Uploads a customer's file to a number as Meta does before notifying it: the media id and hash a notification names. */
  uploadMedia(phoneNumberId: string, file: CustomerFile): { id: string; sha256: string };
  /** Signs a body with a number's app secret. */
  sign(phoneNumberId: string, body: string): string;
  /** Posts the status notification of a sent message (`delivered`, `read`, `failed`…). */
  reportStatus(wamid: string, status: string): Promise<PostedNotification>;
  /** The next `count` sends from this number answer 500 (Meta's code 131000, retryable), or the status given. */
  failNextSends(phoneNumberId: string, count: number, status?: number): void;
  /** The next `count` media downloads (the media's URL) answer the status given (500 by default). */
  failNextDownloads(count: number, status?: number): void;
  /** Whether sent messages get `sent` and `delivered` (or `failed`) notifications (default true). */
  reportStatuses: boolean;
  sent: OutboundWhatsapp[];
  /** Every send attempt, accepted or not. */
  attempts: { phoneNumberId: string; to: string; type: string; status: number }[];
  /** Every media request: the URL lookup (`GET /{media-id}`) and the download, with the status answered. */
  mediaRequests: { kind: 'lookup' | 'download'; mediaId: string; status: number }[];
  notifications: PostedNotification[];
  stop(): Promise<void>;
}

interface NumberAtMeta {
  accessToken: string;
  appSecret: string;
}

interface StoredMedia extends CustomerFile {
  phoneNumberId: string;
  sha256: string;
}

/** Small files of each media type for a customer who sends one without choosing a file (`npm run whatsapp`'s `/image`). */
const sampleFiles: Record<string, CustomerFile> = {
  // A 1×1 PNG.
  image: { body: Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64'), mimeType: 'image/png' },
  sticker: { body: Buffer.from('UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==', 'base64'), mimeType: 'image/webp' },
  audio: { body: Buffer.concat([Buffer.from('OggS'), Buffer.alloc(60)]), mimeType: 'audio/ogg; codecs=opus' },
  video: { body: Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypmp42'), Buffer.alloc(12)]), mimeType: 'video/mp4' },
  document: { body: Buffer.from('A sample document sent from the WhatsApp simulator.\n'), mimeType: 'text/plain', filename: 'sample.txt' },
};
const mediaTypes = new Set(Object.keys(sampleFiles));

/**
 * A local WhatsApp Business Cloud API that speaks Meta's wire protocol: the Graph API's `POST /{version}/{phone
 * number id}/messages` (text and template messages; bearer token, Meta's error shape, approved templates and their
 * parameters checked, and outside the 24-hour window a free-form message accepted and then reported `failed` with
 * 131047, as Meta does), `GET /{version}/{media-id}` and the media URL it gives (bearer token, 5 minutes), and
 * webhook notifications of customer messages (text and media) and delivery statuses, signed with
 * `X-Hub-Signature-256` under the number's app secret, posted to `<apiBaseUrl>/whatsapp/webhook/<phone number id>`.
 * As Meta does, its notifications write every character outside ASCII as a `\uXXXX` escape (the signature covers
 * the escaped text), customers may be known by their business-scoped user id alone (no `wa_id`, no `from`), and a
 * send is addressed by `to` (a phone number) or `recipient` (a BSUID), anything else refused. `npm run whatsapp`
 * chats through its WebSocket `/simulator/customer?number=<phone number id>&wa_id=<customer>` (or `&user_id=<BSUID>`).
 */
export async function startWhatsappSimulator(options: { apiBaseUrl: string; host?: string; port?: number }): Promise<WhatsappSimulator> {
  const host = options.host ?? '127.0.0.1';
  const numbers = new Map<string, NumberAtMeta>();
  const templates = new Map(simulatorTemplates.map((template) => [`${template.name}/${template.language}`, template]));
  const failures = new Map<string, { count: number; status: number }>();
  const downloadFailures = { count: 0, status: 500 };
  const media = new Map<string, StoredMedia>();
  /** When each customer last wrote to each number (`<phone number id>/<wa_id or BSUID>`, epoch ms): the window opens there. */
  const lastCustomerMessage = new Map<string, number>();
  const sent: OutboundWhatsapp[] = [];
  const attempts: WhatsappSimulator['attempts'] = [];
  const mediaRequests: WhatsappSimulator['mediaRequests'] = [];
  const notifications: PostedNotification[] = [];
  /** Terminal customers by `<phone number id>/<wa_id, or BSUID without one>`: they receive what the platform sends them. */
  const customers = new Map<string, Set<WebSocket>>();
  const urlKey = randomBytes(32);

  const numberAt = (phoneNumberId: string): NumberAtMeta => numbers.get(phoneNumberId) ?? { ...simulatorDefaults };
  const sign = (phoneNumberId: string, body: string) => metaSignature(numberAt(phoneNumberId).appSecret, body);
  const newWamid = () => `wamid.${randomBytes(24).toString('base64url')}`;

  /** What Meta learns from a message notification it sends: the customer wrote, so the window is open from then. */
  const noteCustomerMessages = (phoneNumberId: string, body: string) => {
    const list = (value: unknown): Record<string, any>[] => (Array.isArray(value) ? value.filter((item) => typeof item === 'object' && item !== null) : []);
    const entries = list((parse(body) as { entry?: unknown } | undefined)?.entry);
    for (const message of entries.flatMap((entry) => list(entry.changes)).flatMap((change) => list(change.value?.messages))) {
      const at = Number(message.timestamp) * 1000;
      // The window is the customer's, whichever way a send addresses them: their phone number or their BSUID.
      for (const customer of [message.from, message.from_user_id]) {
        if (typeof customer !== 'string') continue;
        const key = `${phoneNumberId}/${customer}`;
        if (Number.isFinite(at) && at > (lastCustomerMessage.get(key) ?? 0)) lastCustomerMessage.set(key, at);
      }
    }
  };

  const post = async (phoneNumberId: string, body: string, signature: string | undefined): Promise<PostedNotification> => {
    noteCustomerMessages(phoneNumberId, body);
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

  /** A customer's file, uploaded as Meta uploads it: its media id, with the hash and type the notification carries. */
  const upload = (phoneNumberId: string, file: CustomerFile): { id: string; sha256: string } => {
    const id = String(1_000_000_000_000_000n + BigInt(`0x${randomBytes(7).toString('hex')}`));
    const sha256 = createHash('sha256').update(file.body).digest('hex');
    media.set(id, { ...file, phoneNumberId, sha256 });
    return { id, sha256 };
  };

  const notificationOf = (message: CustomerMessage): { body: string; wamid: string; mediaId?: string | undefined } => {
    const wamid = message.id ?? newWamid();
    const type = message.type ?? 'text';
    if (!message.from && !message.userId) throw new Error('A customer has a phone number, a business-scoped user id, or both');
    if (message.from && message.userId) {
      knownUsers.set(message.from, message.userId);
      knownUsers.set(message.userId, message.from);
    }
    const profile = { name: message.name ?? 'Local customer', ...(message.username ? { username: message.username } : {}) };
    let content: Record<string, unknown>;
    let mediaId: string | undefined;
    if (type === 'text') content = { text: { body: message.text ?? '' } };
    else if (mediaTypes.has(type)) {
      const file = message.file ?? (sampleFiles[type] as CustomerFile);
      const uploaded = upload(message.phoneNumberId, file);
      mediaId = uploaded.id;
      const described = {
        ...(message.caption !== undefined && type !== 'audio' && type !== 'sticker' ? { caption: message.caption } : {}),
        ...(type === 'document' ? { filename: file.filename ?? 'document' } : {}),
        mime_type: file.mimeType,
        sha256: uploaded.sha256,
        id: uploaded.id,
        ...(type === 'audio' ? { voice: message.voice ?? true } : {}),
        ...(type === 'sticker' ? { animated: false } : {}),
      };
      content = { [type]: described };
    } else content = { [type]: type === 'location' ? { latitude: 52.37, longitude: 4.89 } : {} };
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
    return { body, wamid, mediaId };
  };

  const reportStatus = (wamid: string, status: string, error?: { code: number; title: string; message: string; details: string }): Promise<PostedNotification> => {
    const message = sent.find((candidate) => candidate.wamid === wamid);
    if (!message) throw new Error(`The simulator sent no message ${wamid}`);
    const failure = error ?? { code: 131026, title: 'Message undeliverable', message: 'Message undeliverable', details: 'Message Undeliverable.' };
    const errors =
      status === 'failed'
        ? { errors: [{ code: failure.code, title: failure.title, message: failure.message, error_data: { details: failure.details }, href: 'https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/' }] }
        : {};
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
    registerTemplate: (template) => templates.set(`${template.name}/${template.language}`, template),
    customerSays: async (message) => {
      const { body, wamid, mediaId } = notificationOf(message);
      return { ...(await post(message.phoneNumberId, body, sign(message.phoneNumberId, body))), wamid, mediaId };
    },
    post,
    notificationOf,
    uploadMedia: upload,
    sign,
    reportStatus: (wamid, status) => reportStatus(wamid, status),
    failNextSends: (phoneNumberId, count, status = 500) => failures.set(phoneNumberId, { count, status }),
    failNextDownloads: (count, status = 500) => Object.assign(downloadFailures, { count, status }),
    reportStatuses: true,
    sent,
    attempts,
    mediaRequests,
    notifications,
    stop: async () => {
      for (const client of sockets.clients) client.terminate();
      await new Promise<void>((resolve) => sockets.close(() => resolve()));
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  const graphError = (response: ServerResponse, status: number, code: number, message: string, details?: string) =>
    json(response, status, {
      error: {
        message,
        type: status === 401 || code === 131047 ? 'OAuthException' : 'GraphMethodException',
        code,
        ...(details ? { error_data: { messaging_product: 'whatsapp', details } } : {}),
        fbtrace_id: randomBytes(8).toString('hex'),
      },
    });

  /** A template message checked as Meta checks it: the approved name in that language, and its body parameters. */
  function templateRefusal(template: { name?: unknown; language?: { code?: unknown }; components?: unknown }): { code: number; message: string; details: string } | undefined {
    const name = typeof template.name === 'string' ? template.name : '';
    const language = typeof template.language?.code === 'string' ? template.language.code : '';
    const approved = templates.get(`${name}/${language}`);
    if (!approved) return { code: 132001, message: '(#132001) Template name does not exist in the translation', details: `template name (${name}) does not exist in ${language}` };
    const expected = [...new Set(Array.from(approved.body.matchAll(/\{\{([a-z0-9_]+)\}\}/g), (match) => match[1] as string))];
    const components = Array.isArray(template.components) ? (template.components as { type?: string; parameters?: { type?: string; text?: unknown; parameter_name?: unknown }[] }[]) : [];
    const parameters = components.find((component) => component.type?.toLowerCase() === 'body')?.parameters ?? [];
    if (parameters.length !== expected.length) {
      return {
        code: 132000,
        message: '(#132000) Number of parameters does not match the expected number of params',
        details: `body: number of localizable_params (${parameters.length}) does not match the expected number of params (${expected.length})`,
      };
    }
    const named = expected.some((parameter) => !/^\d+$/.test(parameter));
    for (const [index, parameter] of parameters.entries()) {
      if (parameter.type === 'text' && (typeof parameter.text !== 'string' || parameter.text.trim() === '')) {
        return { code: 131008, message: '(#131008) Required parameter is missing', details: `body: parameter ${index + 1} has no text` };
      }
      if (named && parameter.parameter_name !== expected[index] && !expected.includes(String(parameter.parameter_name))) {
        return { code: 132000, message: '(#132000) Number of parameters does not match the expected number of params', details: `body: parameter ${String(parameter.parameter_name)} is not a parameter of the template` };
      }
    }
    return undefined;
  }

  function renderTemplate(template: { name: string; language: { code: string }; components?: unknown[] }): string {
    const approved = templates.get(`${template.name}/${template.language.code}`) as ApprovedTemplate;
    const components = (template.components ?? []) as { type?: string; parameters?: { text?: string; parameter_name?: string }[] }[];
    const parameters = components.find((component) => component.type?.toLowerCase() === 'body')?.parameters ?? [];
    return approved.body.replace(/\{\{([a-z0-9_]+)\}\}/g, (whole, name: string) => {
      const parameter = /^\d+$/.test(name) ? parameters[Number(name) - 1] : parameters.find((candidate) => candidate.parameter_name === name);
      return parameter?.text ?? whole;
    });
  }

  async function sendMessage(request: IncomingMessage, response: ServerResponse, phoneNumberId: string): Promise<void> {
    const payload = parse(await readText(request)) as
      | {
          messaging_product?: string;
          to?: string;
          recipient?: string;
          type?: string;
          text?: { body?: string };
          template?: { name?: unknown; language?: { code?: unknown }; components?: unknown };
        }
      | undefined;
    // `to` takes a phone number and wins over `recipient`, which takes a business-scoped user id.
    const addressedBy = payload?.to !== undefined ? 'to' : 'recipient';
    const to = payload?.to ?? payload?.recipient ?? '';
    const type = payload?.type ?? '';
    const answer = (status: number, send: () => void) => {
      attempts.push({ phoneNumberId, to, type, status });
      send();
    };
    if (request.headers.authorization !== `Bearer ${numberAt(phoneNumberId).accessToken}`) {
      return answer(401, () => graphError(response, 401, 190, 'Invalid OAuth access token - Cannot parse access token'));
    }
    const body = payload?.text?.body;
    const addressed = addressedBy === 'to' ? phoneNumber.test(to) : businessScopedUserId.test(to);
    const isText = type === 'text' && typeof body === 'string' && body.length > 0 && body.length <= whatsappTextLimit;
    const isTemplate = type === 'template' && typeof payload?.template === 'object' && payload.template !== null;
    if (payload?.messaging_product !== 'whatsapp' || !addressed || !(isText || isTemplate)) {
      return answer(400, () => graphError(response, 400, 100, '(#100) Invalid parameter'));
    }
    const refusal = isTemplate ? templateRefusal(payload.template!) : undefined;
    if (refusal) return answer(400, () => graphError(response, 400, refusal.code, refusal.message, refusal.details));
    const failure = failures.get(phoneNumberId);
    if (failure && failure.count > 0) {
      failure.count -= 1;
      return answer(failure.status, () => graphError(response, failure.status, 131000, 'Something went wrong'));
    }
    const template = isTemplate ? (payload.template as OutboundWhatsapp['template'] & object) : undefined;
    const message: OutboundWhatsapp = {
      phoneNumberId,
      to,
      addressedBy,
      type: template ? 'template' : 'text',
      body: template ? renderTemplate(template) : (body as string),
      ...(template ? { template } : {}),
      wamid: newWamid(),
      at: Date.now(),
      atMonotonic: performance.now(),
    };
    sent.push(message);
    const contact = addressedBy === 'to' ? { input: to, wa_id: to } : { input: to, user_id: to };
    answer(200, () => json(response, 200, { messaging_product: 'whatsapp', contacts: [contact], messages: [{ id: message.wamid, ...(template ? { message_status: 'accepted' } : {}) }] }));
    // Outside the window Meta takes the free-form message, then reports it failed (131047) instead of delivering it.
    const windowClosed = !template && Date.now() - (lastCustomerMessage.get(`${phoneNumberId}/${to}`) ?? Number.NEGATIVE_INFINITY) > customerServiceWindowMs;
    if (!windowClosed) for (const socket of customers.get(`${phoneNumberId}/${to}`) ?? []) socket.send(JSON.stringify({ type: 'message', text: message.body }));
    if (simulator.reportStatuses) {
      // As Meta does, a moment after the send: `sent`, then `delivered`.
      const reported = windowClosed
        ? () =>
            reportStatus(message.wamid, 'failed', {
              code: 131047,
              title: 'Re-engagement message',
              message: 'Re-engagement message',
              details: 'Message failed to send because more than 24 hours have passed since the customer last replied to this number.',
            })
        : () => reportStatus(message.wamid, 'sent').then(() => reportStatus(message.wamid, 'delivered'));
      setTimeout(() => void reported(), 20).unref();
    }
  }

  /** `GET /{media-id}`: the media's URL, valid 5 minutes, for the token of the number that received it. */
  function mediaUrl(request: IncomingMessage, response: ServerResponse, mediaId: string, url: URL): void {
    const stored = media.get(mediaId);
    const answer = (status: number, send: () => void) => {
      mediaRequests.push({ kind: 'lookup', mediaId, status });
      send();
    };
    const requestedNumber = url.searchParams.get('phone_number_id');
    if (!stored || (requestedNumber !== null && requestedNumber !== stored.phoneNumberId)) {
      return answer(400, () =>
        graphError(response, 400, 100, `Unsupported get request. Object with ID '${mediaId}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`),
      );
    }
    if (request.headers.authorization !== `Bearer ${numberAt(stored.phoneNumberId).accessToken}`) {
      return answer(401, () => graphError(response, 401, 190, 'Invalid OAuth access token - Cannot parse access token'));
    }
    const expires = Date.now() + mediaUrlLifetimeMs;
    const link = `${simulator.baseUrl}/whatsapp_business/attachments/?mid=${mediaId}&ext=${Math.floor(expires / 1000)}&hash=${urlHash(mediaId, expires)}`;
    answer(200, () => json(response, 200, { messaging_product: 'whatsapp', url: link, mime_type: stored.mimeType, sha256: stored.sha256, file_size: String(stored.body.byteLength), id: mediaId }));
  }

  const urlHash = (mediaId: string, expires: number) => createHmac('sha256', urlKey).update(`${mediaId}/${Math.floor(expires / 1000)}`).digest('base64url');

  /** The media URL: the bytes, with the same bearer token, until the URL expires (404 then, as Meta answers). */
  function mediaDownload(request: IncomingMessage, response: ServerResponse, url: URL): void {
    const mediaId = url.searchParams.get('mid') ?? '';
    const stored = media.get(mediaId);
    const expires = Number(url.searchParams.get('ext')) * 1000;
    const answer = (status: number, send: () => void) => {
      mediaRequests.push({ kind: 'download', mediaId, status });
      send();
    };
    if (!stored || url.searchParams.get('hash') !== urlHash(mediaId, expires) || Date.now() > expires) {
      return answer(404, () => graphError(response, 404, 100, 'The media URL is invalid or has expired: get a new one with GET /{media-id}.'));
    }
    if (request.headers.authorization !== `Bearer ${numberAt(stored.phoneNumberId).accessToken}`) {
      return answer(401, () => graphError(response, 401, 190, 'Invalid OAuth access token - Cannot parse access token'));
    }
    if (downloadFailures.count > 0) {
      downloadFailures.count -= 1;
      return answer(downloadFailures.status, () => graphError(response, downloadFailures.status, 131000, 'Something went wrong'));
    }
    answer(200, () => response.writeHead(200, { 'content-type': stored.mimeType, 'content-length': stored.body.byteLength }).end(stored.body));
  }

  const server: Server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://simulator');
    const version = graphApiVersion.replace('.', '\\.');
    const messages = new RegExp(`^/${version}/(\\d+)/messages$`).exec(url.pathname);
    if (request.method === 'POST' && messages) {
      sendMessage(request, response, messages[1] as string).catch(() => graphError(response, 500, 1, 'An unknown error occurred'));
      return;
    }
    const mediaLookup = new RegExp(`^/${version}/(\\d+)/?$`).exec(url.pathname);
    if (request.method === 'GET' && mediaLookup) return mediaUrl(request, response, mediaLookup[1] as string, url);
    if (request.method === 'GET' && url.pathname === '/whatsapp_business/attachments/') return mediaDownload(request, response, url);
    graphError(response, 404, 803, 'Unknown path components');
  });

  // `npm run whatsapp`: one WebSocket per terminal customer; `{type:'say', text}` or `{type:'say', media, file?,
  // mimeType?, filename?, caption?}` (the file base64) in, `{type:'message', text}` out.
  const sockets = new WebSocketServer({ noServer: true, maxPayload: 110 * 1024 * 1024 });
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
        const said = parse(data.toString()) as { type?: string; text?: string; media?: string; file?: string; mimeType?: string; filename?: string; caption?: string } | undefined;
        if (said?.type !== 'say') return;
        const sender = { ...(waId ? { from: waId } : {}), ...(userId ? { userId } : {}) };
        const file = said.file && said.mimeType ? { body: Buffer.from(said.file, 'base64'), mimeType: said.mimeType, ...(said.filename ? { filename: said.filename } : {}) } : undefined;
        const message: CustomerMessage = said.media
          ? { phoneNumberId: number, ...sender, type: said.media, ...(file ? { file } : {}), ...(said.caption ? { caption: said.caption } : {}) }
          : { phoneNumberId: number, ...sender, text: said.text ?? '' };
        const posted = await simulator.customerSays(message);
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

/** The local bucket customers' media are copied to, in fauxqs's S3. */
export const localMediaBucket = 'whatsapp-media';

/**
 * WhatsApp on this machine: the simulator, wired through the variables the handlers read on AWS too (call before
 * they read their configuration). `apiBaseUrl` is where its webhooks go; tools and webhooks cannot reach it. With
 * the queues, customers' media are copied to a bucket of the emulator's S3. Addresses the environment names already
 * win: with WHATSAPP_GRAPH_API_URL set (the real Graph API, or another test double) no simulator starts (the media
 * bucket is still the emulator's), and a set PUBLIC_BASE_URL (the tunnel Meta posts to) is kept.
 */
export async function startLocalWhatsapp(
  apiBaseUrl: string,
  env: NodeJS.ProcessEnv = process.env,
  options: { port?: number | undefined; queues?: Pick<LocalQueues, 'endpoint' | 'region'> | undefined } = {},
): Promise<WhatsappSimulator | undefined> {
  env.PUBLIC_BASE_URL ??= apiBaseUrl;
  if (options.queues) {
    env.S3_ENDPOINT = options.queues.endpoint;
    env.WHATSAPP_MEDIA_BUCKET = localMediaBucket;
    const s3 = new S3Client({ endpoint: options.queues.endpoint, forcePathStyle: true, region: options.queues.region, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
    await s3.send(new CreateBucketCommand({ Bucket: localMediaBucket })).catch((error: Error) => {
      if (error.name !== 'BucketAlreadyOwnedByYou' && error.name !== 'BucketAlreadyExists') throw error;
    });
    s3.destroy();
  }
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
