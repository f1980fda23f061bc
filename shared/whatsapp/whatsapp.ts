import { timingSafeEqual } from 'node:crypto';
import { agentOfSessionBinding, boundVersion, publishedAgent } from '../agents/agent-versions.ts';
import type { Config } from '../platform/config.ts';
import { AppError, ForbiddenError, InvalidSignatureError, NotFoundError, ValidationError } from '../platform/errors.ts';
import { logger } from '../platform/logger.ts';
import { emfMetrics } from '../platform/metrics.ts';
import { whatsappMetrics } from './whatsapp-metrics.ts';
import type { StoredSession } from '../conversations/ports.ts';
import type { Page } from '../platform/schemas/common.ts';
import type { Message } from '../conversations/session-schemas.ts';
import {
  customerKey,
  defaultUnsupportedReply,
  deliveryStatuses,
  isMediaKind,
  webhookChangeValue,
  webhookMessage,
  webhookNotification,
  webhookStatus,
  whatsappTextLimit,
  type CreateWhatsappNumberInput,
  type WebhookContact,
  type WhatsappCustomer,
  type DeliveryStatus,
  type InboundWhatsappMessage,
  type MediaKind,
  type StatusNotification,
  type StoredWhatsappNumber,
  type UpdateWhatsappNumberInput,
  type WhatsappNumber,
  type WhatsappQueueMessage,
  type WhatsappSend,
} from './whatsapp-schemas.ts';
import type { SealedWhatsappNumber, WhatsappStore } from './whatsapp-store.ts';
import { GraphApiError, windowClosedMetaCode, withRetries, type WhatsappMessaging, type WhatsappRecipient } from './graph-client.ts';
import { readMedia, transcriptionModel, type MediaReadingDeps, type ReadMedia } from './inbound-media.ts';
import { mediaKey, type WhatsappMediaStore } from './media-store.ts';
import { isValidMetaSignature } from './meta-signature.ts';
import { splitForWhatsapp } from './split-text.ts';
import { newId, nextUpdatedAt } from '../platform/clock.ts';
import { sessionEvents } from '../conversations/session-events.ts';
import { expireIfIdle, expiryEpochSeconds, type SessionDeps } from '../conversations/sessions.ts';
import { newMessageId, prepareTurn, runTurn, type TurnDeps } from '../conversations/turn.ts';
import { modelOfOrganization } from '../models/provider-keys.ts';

export interface WhatsappDeps extends SessionDeps {
  whatsapp: WhatsappStore;
  config: SessionDeps['config'] & Pick<Config, 'PUBLIC_BASE_URL'>;
}

/** Where notifications wait between the webhook's fast 200 and their handling (a FIFO queue, one group per customer). */
export interface WhatsappInbound {
  enqueue(messages: WhatsappQueueMessage[]): Promise<void>;
}

export interface WhatsappWebhookDeps extends WhatsappDeps {
  inbound: WhatsappInbound;
}

export interface WhatsappConversationDeps extends WhatsappDeps, TurnDeps, MediaReadingDeps {
  messaging: WhatsappMessaging;
  media: WhatsappMediaStore;
  config: WhatsappDeps['config'] & TurnDeps['config'] & Pick<Config, 'WHATSAPP_SEND_RETRY_MS'>;
}

/** WhatsApp's customer-service window: free-form replies only within 24 hours of the customer's last message. */
export const customerServiceWindowMs = 24 * 60 * 60 * 1000;

// ---- Numbers -------------------------------------------------------------------------------------------------

export async function connectNumber(deps: WhatsappDeps, orgId: string, input: CreateWhatsappNumberInput): Promise<WhatsappNumber> {
  await requireAgent(deps, orgId, input.agentId);
  const now = deps.clock.now().toISOString();
  const number: StoredWhatsappNumber = {
    id: newId(),
    orgId,
    phoneNumberId: input.phoneNumberId,
    displayPhoneNumber: input.displayPhoneNumber,
    agentId: input.agentId,
    ...(input.label !== undefined ? { label: input.label } : {}),
    ...(input.unsupportedMessageReply !== undefined ? { unsupportedMessageReply: input.unsupportedMessageReply } : {}),
    createdAt: now,
    updatedAt: now,
  };
  const { accessToken, appSecret, verifyToken } = input;
  await deps.whatsapp.createNumber(number, { accessToken, appSecret, verifyToken });
  return publicNumber(deps, number);
}

export async function listNumbers(deps: WhatsappDeps, orgId: string, query: { page: number; limit: number }): Promise<Page<WhatsappNumber>> {
  const all = await deps.whatsapp.listNumbers(orgId);
  const data = all.slice((query.page - 1) * query.limit, query.page * query.limit).map((number) => publicNumber(deps, number));
  return { data, pagination: { page: query.page, limit: query.limit, total: all.length, totalPages: Math.ceil(all.length / query.limit) } };
}

export async function getNumber(deps: WhatsappDeps, orgId: string, numberId: string): Promise<WhatsappNumber> {
  return publicNumber(deps, await requireNumber(deps, orgId, numberId));
}

export async function updateNumber(deps: WhatsappDeps, orgId: string, numberId: string, input: UpdateWhatsappNumberInput): Promise<WhatsappNumber> {
  const previous = await requireNumber(deps, orgId, numberId);
  if (input.agentId) await requireAgent(deps, orgId, input.agentId);
  const { sealed: _sealed, ...stored } = previous;
  const next: StoredWhatsappNumber = { ...stored, updatedAt: nextUpdatedAt(deps.clock, previous.updatedAt) };
  if (input.agentId) next.agentId = input.agentId;
  if (input.label === null) delete next.label;
  else if (input.label !== undefined) next.label = input.label;
  if (input.unsupportedMessageReply === null) delete next.unsupportedMessageReply;
  else if (input.unsupportedMessageReply !== undefined) next.unsupportedMessageReply = input.unsupportedMessageReply;
  const secrets = Object.fromEntries((['accessToken', 'appSecret', 'verifyToken'] as const).filter((name) => input[name] !== undefined).map((name) => [name, input[name] as string]));
  await deps.whatsapp.replaceNumber(previous, next, secrets);
  return publicNumber(deps, next);
}

export async function disconnectNumber(deps: WhatsappDeps, orgId: string, numberId: string): Promise<void> {
  if (!(await deps.whatsapp.deleteNumber(orgId, numberId))) throw new NotFoundError(`WhatsApp number ${numberId} not found.`);
}

async function requireNumber(deps: WhatsappDeps, orgId: string, numberId: string): Promise<SealedWhatsappNumber> {
  const number = await deps.whatsapp.getNumber(orgId, numberId);
  if (!number) throw new NotFoundError(`WhatsApp number ${numberId} not found.`);
  return number;
}

async function requireAgent(deps: WhatsappDeps, orgId: string, agentId: string): Promise<void> {
  if (!(await deps.agents.get(orgId, agentId))) throw new NotFoundError(`Agent ${agentId} not found.`);
}

function publicNumber(deps: WhatsappDeps, number: StoredWhatsappNumber): WhatsappNumber {
  return {
    id: number.id,
    phoneNumberId: number.phoneNumberId,
    displayPhoneNumber: number.displayPhoneNumber,
    agentId: number.agentId,
    ...(number.label !== undefined ? { label: number.label } : {}),
    unsupportedMessageReply: number.unsupportedMessageReply ?? defaultUnsupportedReply,
    webhookUrl: webhookUrl(deps, number.phoneNumberId),
    createdAt: number.createdAt,
    updatedAt: number.updatedAt,
  };
}

/** The callback URL to give Meta for a number (its handshake is checked against that number's verify token). */
export function webhookUrl(deps: Pick<WhatsappDeps, 'config'>, phoneNumberId: string): string {
  if (!deps.config.PUBLIC_BASE_URL) throw new Error('PUBLIC_BASE_URL is not set: Meta cannot reach this deployment.');
  return `${deps.config.PUBLIC_BASE_URL.replace(/\/$/, '')}/whatsapp/webhook/${phoneNumberId}`;
}

// ---- Meta's webhook ------------------------------------------------------------------------------------------

async function numberOf(deps: WhatsappDeps, phoneNumberId: string): Promise<SealedWhatsappNumber | undefined> {
  const owner = await deps.whatsapp.owner(phoneNumberId);
  return owner && deps.whatsapp.getNumber(owner.orgId, owner.numberId);
}

/**
 * The webhook's numbers, remembered per process for `webhookCacheMs` so that an acknowledgement is one queue send:
 * Meta expects its 200 fast. A signature that fails under a remembered number is checked again under a fresh read
 * (the secret may have been replaced), so a change takes effect at once for the new secret.
 */
const webhookNumbers = new Map<string, { number: SealedWhatsappNumber | undefined; appSecret: string | undefined; at: number }>();
const webhookCacheMs = 30_000;
const maxWebhookNumbers = 10_000;

async function verifiedBody(deps: WhatsappDeps, phoneNumberId: string, rawBody: string, signature: string | undefined): Promise<SealedWhatsappNumber | undefined | 'unknown'> {
  const check = (entry: { number: SealedWhatsappNumber | undefined; appSecret: string | undefined }) =>
    entry.number ? (entry.appSecret !== undefined && isValidMetaSignature(entry.appSecret, signature, rawBody) ? entry.number : undefined) : 'unknown';
  const remembered = webhookNumbers.get(phoneNumberId);
  // Only a known number is trusted from memory: one connected a moment ago must not stay 404.
  if (remembered?.number && Date.now() - remembered.at < webhookCacheMs) {
    const verdict = check(remembered);
    if (verdict !== undefined) return verdict;
  }
  const number = await numberOf(deps, phoneNumberId);
  const fresh = { number, appSecret: number && (await deps.whatsapp.openSecret(number, 'appSecret')), at: Date.now() };
  if (webhookNumbers.size >= maxWebhookNumbers) webhookNumbers.delete(webhookNumbers.keys().next().value as string);
  webhookNumbers.set(phoneNumberId, fresh);
  return check(fresh);
}

/** The verification handshake: Meta's challenge echoed when the verify token is the number's; 403 otherwise. */
export async function answerHandshake(deps: WhatsappDeps, phoneNumberId: string, query: { 'hub.mode'?: string | undefined; 'hub.verify_token'?: string | undefined; 'hub.challenge'?: string | undefined }): Promise<string> {
  const number = await numberOf(deps, phoneNumberId);
  if (!number) throw new NotFoundError('No organization has connected this WhatsApp number.');
  const verifyToken = await deps.whatsapp.openSecret(number, 'verifyToken');
  const given = Buffer.from(query['hub.verify_token'] ?? '');
  const expected = Buffer.from(verifyToken);
  if (query['hub.mode'] !== 'subscribe' || !query['hub.challenge'] || given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw new ForbiddenError('The verify token does not match this number\'s.');
  }
  return query['hub.challenge'];
}

/**
 * A notification: verified with the app secret of the number its URL names (401 otherwise), then each change is
 * routed by its own `phone_number_id` (numbers of one Meta app share a webhook) and queued, one FIFO group per
 * customer. A change for a number whose app secret does not verify this body is dropped.
 */
export async function receiveNotification(deps: WhatsappWebhookDeps, phoneNumberId: string, rawBody: string, signature: string | undefined): Promise<void> {
  const number = await verifiedBody(deps, phoneNumberId, rawBody, signature);
  if (number === 'unknown') throw new NotFoundError('No organization has connected this WhatsApp number.');
  if (!number) throw new InvalidSignatureError('The X-Hub-Signature-256 does not match this body under the app secret.');
  let parsed: unknown;
  try {
    parsed = JSON.parse(rawBody);
  } catch {
    throw new ValidationError('The notification is not JSON.');
  }
  const notification = webhookNotification.safeParse(parsed);
  if (!notification.success) throw new ValidationError('The notification is not a WhatsApp Business Account notification.');
  const verified = new Map<string, SealedWhatsappNumber | undefined>([[phoneNumberId, number]]);
  const queued: WhatsappQueueMessage[] = [];
  for (const change of notification.data.entry.flatMap((entry) => entry.changes)) {
    if (change.field !== 'messages') {
      unhandledNotification('field not handled', { phoneNumberId, field: change.field });
      continue;
    }
    const value = webhookChangeValue.safeParse(change.value);
    if (!value.success) {
      unhandledNotification('change not understood', { phoneNumberId });
      continue;
    }
    const target = value.data.metadata.phone_number_id;
    if (!verified.has(target)) {
      const verdict = await verifiedBody(deps, target, rawBody, signature);
      verified.set(target, verdict === 'unknown' ? undefined : verdict);
    }
    const owner = verified.get(target);
    if (!owner) {
      unhandledNotification('number not verified by this notification', { phoneNumberId: target });
      continue;
    }
    const where = { orgId: owner.orgId, numberId: owner.id };
    for (const raw of value.data.messages ?? []) {
      const message = webhookMessage.safeParse(raw);
      const customer = message.success ? customerOf(message.data, value.data.contacts ?? []) : undefined;
      if (!message.success || !customer) {
        unhandledNotification(message.success ? 'message names no sender' : 'message not understood', { ...where, wamid: (raw as { id?: unknown } | undefined)?.id });
        continue;
      }
      queued.push({ kind: 'message', ...where, customer, message: message.data });
    }
    for (const raw of value.data.statuses ?? []) {
      const status = webhookStatus.safeParse(raw);
      if (status.success) queued.push({ kind: 'status', ...where, status: status.data });
      else unhandledNotification('status not understood', { ...where, wamid: (raw as { id?: unknown } | undefined)?.id });
    }
    for (const error of value.data.errors ?? []) unhandledNotification('error reported by Meta', { ...where, error });
  }
  if (queued.length) await deps.inbound.enqueue(queued);
}

/**
 * The sender of a message, by its own ids and the contact that names them (the same phone number or BSUID, or
 * the only contact): phone number and BSUID as given, at least one, with the profile's name and username.
 */
function customerOf(message: InboundWhatsappMessage, contacts: readonly WebhookContact[]): WhatsappCustomer | undefined {
  const contact =
    contacts.find((candidate) => (candidate.user_id !== undefined && candidate.user_id === message.from_user_id) || (candidate.wa_id !== undefined && candidate.wa_id === message.from)) ??
    (contacts.length === 1 ? contacts[0] : undefined);
  const waId = message.from ?? contact?.wa_id;
  const userId = message.from_user_id ?? contact?.user_id;
  if (waId === undefined && userId === undefined) return undefined;
  const { name, username } = contact?.profile ?? {};
  return { ...(waId ? { waId } : {}), ...(userId ? { userId } : {}), ...(name ? { name } : {}), ...(username ? { username } : {}) };
}

/** A notification (or a part of it) acknowledged and not acted on: never silent, a warning (with why) and a count. */
function unhandledNotification(reason: string, fields: Record<string, unknown>): void {
  logger.warn(`WhatsApp notification acknowledged, not handled: ${reason}`, { reason, ...fields });
  emfMetrics.add(whatsappMetrics.unhandledNotifications, 1);
}

// ---- Handling queued notifications ---------------------------------------------------------------------------

export async function handleQueuedNotification(deps: WhatsappConversationDeps, queued: WhatsappQueueMessage): Promise<void> {
  if (queued.kind === 'status') {
    const [number, sent] = await Promise.all([deps.whatsapp.getNumber(queued.orgId, queued.numberId), deps.whatsapp.outbound(queued.orgId, queued.numberId, queued.status.id)]);
    if (number) await recordStatus(deps, number, queued.status, sent);
    else unhandledNotification('number disconnected since', { orgId: queued.orgId, numberId: queued.numberId, wamid: queued.status.id });
    return;
  }
  // One round trip: the number, the claim on the message id, and the customer's last session.
  const { orgId, numberId, customer, message } = queued;
  const [number, claimed, knownSession] = await Promise.all([
    deps.whatsapp.getNumber(orgId, numberId),
    deps.whatsapp.claimInbound(orgId, numberId, message.id, deps.clock.now().getTime()),
    deps.whatsapp.customerSession(orgId, numberId, sessionKeysOf(customer)),
  ]);
  if (!number) {
    unhandledNotification('number disconnected since', { orgId, numberId, wamid: message.id });
    return;
  }
  if (claimed) await answerMessage(deps, number, customer, message, knownSession);
}

/**
 * Where the customer's last session may be found: under their key (their BSUID, or their phone number), and under
 * their phone number too when the message names both, for a conversation a template started: it went `to` the
 * phone number, which is all the business knew of the customer then.
 */
function sessionKeysOf(customer: WhatsappCustomer): string[] {
  return customer.userId && customer.waId ? [customerKey(customer), customer.waId] : [customerKey(customer)];
}

/**
 * An inbound message, answered once: its id is taken first (a redelivery stops there). A failure before anything
 * was sent gives the id back and fails the queue message, which comes again; after a send, it is logged instead.
 */
async function answerMessage(
  deps: WhatsappConversationDeps,
  number: SealedWhatsappNumber,
  customer: WhatsappCustomer,
  message: InboundWhatsappMessage,
  knownSession: string | undefined,
): Promise<void> {
  const progress = { sent: false };
  try {
    const windowEndsAt = Number(message.timestamp) * 1000 + customerServiceWindowMs;
    const outbox = new Outbox(deps, number, customer, windowEndsAt, progress);
    const inbound = { wamid: message.id, type: message.type, timestamp: message.timestamp };
    if (message.type === 'text' && message.text?.body.trim()) await converse(deps, number, customer, knownSession, message.text.body, inbound, outbox);
    else if (isMediaKind(message.type)) {
      const media = await readMedia(deps, number, await outbox.accessToken(), { ...message, type: message.type }, await sttModelFor(deps, number, message.type, knownSession));
      await converse(deps, number, customer, knownSession, media.content, { ...inbound, media: media.record }, outbox, media);
    } else {
      const session = await customerSession(deps, number, customer, knownSession);
      if (session) await answerUnsupported(deps, session, number, inbound, outbox);
    }
  } catch (error) {
    if (error instanceof AppError && error.code !== 'SESSION_BUSY') {
      // The turn was refused (quota, inactive agent, a session closed meanwhile): nothing a retry would change.
      logger.warn('WhatsApp message not answered', { orgId: number.orgId, numberId: number.id, wamid: message.id, code: error.code, reason: error.message });
      return;
    }
    if (!progress.sent) await deps.whatsapp.releaseInbound(number.orgId, number.id, message.id);
    throw error;
  }
}

/** For audio: the STT model of the agent that will answer (the customer's session's, or the number's). */
async function sttModelFor(deps: WhatsappConversationDeps, number: SealedWhatsappNumber, kind: MediaKind, knownSession: string | undefined) {
  if (kind !== 'audio') return undefined;
  const session = knownSession ? await deps.sessions.get(number.orgId, knownSession) : undefined;
  const agent = await agentOfSessionBinding(deps, number.orgId, session ?? { agentId: number.agentId });
  return transcriptionModel(deps, agent?.sttModelId);
}

/** The customer's open session with this number, or a new one (none was open, or it expired or was closed). */
async function customerSession(deps: WhatsappConversationDeps, number: SealedWhatsappNumber, customer: WhatsappCustomer, known: string | undefined): Promise<StoredSession | undefined> {
  const current = known ? await deps.sessions.get(number.orgId, known) : undefined;
  if (current && (await expireIfIdle(deps, current)).state === 'OPEN') return current;
  return openCustomerSession(deps, number, customer);
}

async function openCustomerSession(deps: WhatsappConversationDeps, number: SealedWhatsappNumber, customer: WhatsappCustomer): Promise<StoredSession | undefined> {
  const agent = await publishedAgent(deps, number.orgId, number.agentId);
  if (!agent?.isActive || !(await modelOfOrganization(deps, number.orgId, agent.modelId))) {
    logger.warn('WhatsApp message not answered: the number\'s agent is missing, inactive or its model unavailable', { orgId: number.orgId, numberId: number.id });
    return undefined;
  }
  const now = deps.clock.now();
  const session: StoredSession = {
    id: newId(),
    orgId: number.orgId,
    agentId: agent.id,
    ...boundVersion(agent),
    type: 'CHAT',
    direction: 'INBOUND',
    platform: 'WHATSAPP',
    state: 'OPEN',
    metadata: {
      sessionVariables: {},
      whatsapp: {
        numberId: number.id,
        phoneNumberId: number.phoneNumberId,
        ...(customer.waId ? { customerWaId: customer.waId } : {}),
        ...(customer.userId ? { customerUserId: customer.userId } : {}),
        ...(customer.name ? { customerName: customer.name } : {}),
        ...(customer.username ? { customerUsername: customer.username } : {}),
      },
    },
    createdAt: now.toISOString(),
    updatedAt: now.toISOString(),
    lastActivityAt: now.toISOString(),
    messageCount: 0,
    nextSeq: 1,
  };
  await deps.whatsapp.openCustomerSession(session, expiryEpochSeconds(deps, now.getTime()), [sessionEvents.sessionCreated(session)], { numberId: number.id, customerKey: customerKey(customer) });
  return session;
}

/** Why a turn cannot go to the customer's last session: it is gone, expired (now) or closed. */
const sessionOver = new Set(['SESSION_NOT_FOUND', 'SESSION_EXPIRED', 'INVALID_SESSION']);

/**
 * One turn of the turn engine, in the customer's last session (the turn's own reads find it open, or expire it)
 * or a new one; its text leaves as WhatsApp messages, a `preExecutionMessage` as one of its own. A media file is
 * kept under the session before the turn runs, and an image goes to a model that accepts images.
 */
async function converse(
  deps: WhatsappConversationDeps,
  number: SealedWhatsappNumber,
  customer: WhatsappCustomer,
  knownSession: string | undefined,
  content: string,
  inbound: Record<string, unknown>,
  outbox: Outbox,
  media?: ReadMedia,
): Promise<void> {
  const input = { content, stream: false, metadata: { whatsapp: inbound } };
  const prepareIn = async (session: StoredSession | undefined) => session && prepareTurn(deps, number.orgId, session.id, input);
  let turn;
  try {
    turn = knownSession ? await prepareTurn(deps, number.orgId, knownSession, input) : await prepareIn(await openCustomerSession(deps, number, customer));
  } catch (error) {
    if (!(error instanceof AppError && sessionOver.has(error.code))) throw error;
    turn = await prepareIn(await openCustomerSession(deps, number, customer));
  }
  if (!turn) return;
  const session = turn.session;
  const file = media?.file;
  if (file && media.record.id) {
    try {
      await deps.media.put(mediaKey(session.orgId, session.id, media.record.id), file.body, file.mimeType);
      media.record.stored = true;
    } catch (error) {
      turn.release();
      throw error;
    }
  }
  const images = file && file.mimeType.startsWith('image/') ? [{ mediaType: file.mimeType, data: file.body }] : [];
  let pending = '';
  const flush = () => {
    outbox.send(pending);
    pending = '';
  };
  const result = await runTurn(deps, turn, { delta: (_id, text) => (pending += text), failed: () => undefined, boundary: flush }, { closeWhenAgentEnds: true, userImages: images });
  flush();
  const reply = result.messages.at(-1);
  if (reply) await outbox.record(session, reply.id, result.replySeq);
}

/** A message the agent cannot read: recorded as the user's (with its type), answered with the number's reply. */
async function answerUnsupported(deps: WhatsappConversationDeps, session: StoredSession, number: SealedWhatsappNumber, inbound: Record<string, unknown>, outbox: Outbox): Promise<void> {
  const now = deps.clock.now();
  const at = now.toISOString();
  const text = number.unsupportedMessageReply ?? defaultUnsupportedReply;
  const user: Message = { id: newMessageId(), sessionId: session.id, role: 'USER', content: `[${String(inbound.type)}]`, metadata: { whatsapp: inbound }, createdAt: at };
  const reply: Message = { id: newMessageId(), sessionId: session.id, role: 'ASSISTANT', content: text, metadata: { status: 'COMPLETED', unsupportedMessage: true }, createdAt: at };
  let current: StoredSession | undefined = session;
  while (current && (await deps.sessions.commitTurn(current, [user, reply], { nowIso: at })) === 'conflict') {
    current = await deps.sessions.get(session.orgId, session.id);
  }
  if (!current) return;
  outbox.send(text);
  await outbox.record(session, reply.id, current.nextSeq + 1);
}

/**
 * The WhatsApp messages of one reply, sent one after another in order (each part of a long text, each utterance),
 * each retried with backoff; what happened to each is recorded on the reply's `metadata.whatsapp.sends`.
 */
class Outbox {
  private chain = Promise.resolve();
  private readonly sends: WhatsappSend[] = [];
  private token: Promise<string> | undefined;

  private readonly deps: WhatsappConversationDeps;
  private readonly number: SealedWhatsappNumber;
  private readonly to: WhatsappRecipient;
  private readonly windowEndsAt: number;
  private readonly progress: { sent: boolean };

  constructor(deps: WhatsappConversationDeps, number: SealedWhatsappNumber, to: WhatsappRecipient, windowEndsAt: number, progress: { sent: boolean }) {
    this.deps = deps;
    this.number = number;
    this.to = to;
    this.windowEndsAt = windowEndsAt;
    this.progress = progress;
  }

  send(text: string): void {
    for (const part of splitForWhatsapp(text, whatsappTextLimit)) this.chain = this.chain.then(() => this.sendPart(part));
  }

  /** The number's access token, opened once for the message's sends and media downloads. */
  accessToken(): Promise<string> {
    this.token ??= this.deps.whatsapp.openSecret(this.number, 'accessToken');
    return this.token;
  }

  /** Waits for the sends, then writes them on the reply (message `seq` of the session, checked by its id). */
  async record(session: StoredSession, messageId: string, seq: number): Promise<void> {
    await this.chain;
    if (this.sends.length === 0) return;
    await this.deps.whatsapp.recordSends({ orgId: session.orgId, sessionId: session.id, seq, messageId, numberId: this.number.id }, this.sends, this.deps.clock.now().getTime());
  }

  private async sendPart(body: string): Promise<void> {
    const now = () => this.deps.clock.now();
    if (now().getTime() > this.windowEndsAt) {
      logger.warn('WhatsApp reply not sent: the customer-service window is closed', { orgId: this.number.orgId, numberId: this.number.id });
      this.sends.push({ chars: body.length, status: 'refused', attempts: 0, updatedAt: now().toISOString(), error: { code: 'WHATSAPP_WINDOW_CLOSED', message: windowClosedMessage } });
      return;
    }
    // A token that cannot be opened fails the message before anything is sent: the queue retries it.
    const accessToken = await this.accessToken();
    let send: Pick<WhatsappSend, 'wamid' | 'status' | 'attempts' | 'error'>;
    try {
      const { wamid, attempts } = await withRetries(this.deps, () => this.deps.messaging.sendText({ phoneNumberId: this.number.phoneNumberId, accessToken, to: this.to, body }));
      this.progress.sent = true;
      send = { wamid, status: 'sent', attempts };
    } catch (error) {
      const failure = error as GraphApiError & { attempts: number };
      const windowClosed = failure.code === 'WHATSAPP_WINDOW_CLOSED';
      const context = { orgId: this.number.orgId, numberId: this.number.id, attempts: failure.attempts, code: failure.code, reason: failure.message };
      if (windowClosed) logger.warn('WhatsApp reply refused by Meta: the customer-service window is closed', context);
      else logger.error('WhatsApp send failed', context);
      send = { status: windowClosed ? 'refused' : 'failed', attempts: failure.attempts, error: { code: failure.code, message: windowClosed ? `${windowClosedMessage} ${failure.message}` : failure.message } };
    }
    this.sends.push({ ...send, chars: body.length, updatedAt: now().toISOString() });
  }
}

/** Why a free-form reply was not sent, in the words of the send's `error`. */
const windowClosedMessage =
  "More than 24 hours since the customer's last message: WhatsApp takes only template messages (POST /v1/chat/whatsapp/numbers/{id}/conversations) until the customer writes again.";

/** A status notification (sent, delivered, read, failed), recorded on the reply it belongs to; statuses only move forward. */
async function recordStatus(deps: WhatsappConversationDeps, number: SealedWhatsappNumber, status: StatusNotification, sent: { sessionId: string; seq: number; index: number } | undefined): Promise<void> {
  if (!(deliveryStatuses as readonly string[]).includes(status.status)) return;
  if (!sent) {
    unhandledNotification('status of a message this platform did not send', { orgId: number.orgId, numberId: number.id, wamid: status.id });
    return;
  }
  const metaError = status.errors?.[0];
  // Meta accepts a free-form message outside the window, then reports it failed with 131047.
  const windowClosed = metaError?.code === windowClosedMetaCode;
  if (windowClosed) logger.warn('WhatsApp reply failed at Meta: the customer-service window is closed', { orgId: number.orgId, numberId: number.id, wamid: status.id });
  const error = metaError
    ? { code: windowClosed ? 'WHATSAPP_WINDOW_CLOSED' : `META_${metaError.code ?? 'ERROR'}`, message: `${windowClosed ? `${windowClosedMessage} ` : ''}${metaError.message ?? metaError.title ?? 'Meta reported a failure.'}` }
    : undefined;
  const at = new Date(Number(status.timestamp) * 1000).toISOString();
  await deps.whatsapp.advanceSend(number.orgId, sent, status.status as DeliveryStatus, at, error);
}
