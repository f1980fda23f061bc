import * as z from 'zod';
import { optionalText, pageOf, paginationQuery } from '../platform/schemas/common.ts';

/** Meta's id of a business phone number (digits; the Graph API path names it). */
export const metaPhoneNumberId = z.string().trim().regex(/^\d{5,30}$/, { error: 'must be the phone number id Meta shows (digits)' });

/** WhatsApp's own limit of a text message's body; longer replies are split (docs/whatsapp.md#limits). */
export const whatsappTextLimit = 4096;

/** The reply to a message the agent cannot read (an image, audio, a sticker, a location) when the number sets none. */
export const defaultUnsupportedReply = 'Sorry, I can only read text messages. Could you write your question?';

export const whatsappNumberParams = z.object({ id: z.uuid({ error: 'must be a UUID' }) });
export const webhookParams = z.object({ phone_number_id: metaPhoneNumberId });

const secretText = (what: string) => z.string().trim().min(8, { error: `must be the ${what} (at least 8 characters)` }).max(1024);

export const createWhatsappNumberBody = z.strictObject({
  phoneNumberId: metaPhoneNumberId,
  displayPhoneNumber: z.string().trim().regex(/^\+?[0-9 ()-]{6,24}$/, { error: 'must be a phone number such as +1 555 010 0100' }),
  agentId: z.uuid({ error: 'must be a UUID' }),
  /** A system user's access token with whatsapp_business_messaging: write-only, sealed at rest. */
  accessToken: secretText('access token'),
  /** The Meta app's secret: signs the webhook notifications (X-Hub-Signature-256). Write-only, sealed at rest. */
  appSecret: secretText('app secret'),
  /** The token typed into the webhook settings at Meta, echoed in the verification handshake. Write-only. */
  verifyToken: secretText('verify token'),
  label: optionalText(200).optional(),
  unsupportedMessageReply: optionalText(1000).min(1).optional(),
});

export const updateWhatsappNumberBody = z
  .strictObject({
    agentId: z.uuid({ error: 'must be a UUID' }),
    accessToken: secretText('access token'),
    appSecret: secretText('app secret'),
    verifyToken: secretText('verify token'),
    label: optionalText(200).nullable(),
    unsupportedMessageReply: optionalText(1000).min(1).nullable(),
  })
  .partial()
  .refine((body) => Object.keys(body).length > 0, { error: 'must change at least one field' });

export const listWhatsappNumbersQuery = paginationQuery;

export const whatsappNumberRecord = z.object({
  id: z.uuid(),
  phoneNumberId: z.string(),
  displayPhoneNumber: z.string(),
  agentId: z.uuid(),
  label: z.string().optional(),
  unsupportedMessageReply: z.string(),
  /** Where Meta sends this number's notifications: the callback URL of the webhook settings. */
  webhookUrl: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const whatsappNumberList = pageOf(whatsappNumberRecord);

export type CreateWhatsappNumberInput = z.output<typeof createWhatsappNumberBody>;
export type UpdateWhatsappNumberInput = z.output<typeof updateWhatsappNumberBody>;
export type WhatsappNumber = z.output<typeof whatsappNumberRecord>;

/** What the store keeps of a number; its three secrets stay sealed until `WhatsappStore.credentials`. */
export interface StoredWhatsappNumber {
  id: string;
  orgId: string;
  phoneNumberId: string;
  displayPhoneNumber: string;
  agentId: string;
  label?: string | undefined;
  unsupportedMessageReply?: string | undefined;
  createdAt: string;
  updatedAt: string;
}

export interface WhatsappSecrets {
  accessToken: string;
  appSecret: string;
  verifyToken: string;
}

// ---- Meta's webhook notification (the fields the platform reads; the rest passes through) --------------------

/**
 * A WhatsApp user as Meta names them: the phone number (`wa_id`, a message's `from`) when it is shared, and the
 * business-scoped user id (BSUID, `user_id`, a message's `from_user_id`, such as `US.13491208655302741918`), which
 * Meta sends in every message notification since 2026 and which is the only id of a user who adopted a username.
 */
const waId = z.string().min(1).max(64);
const userId = z.string().min(1).max(160);

const inboundMessage = z.looseObject({
  from: waId.optional(),
  from_user_id: userId.optional(),
  id: z.string().min(1).max(256),
  timestamp: z.string().regex(/^\d+$/),
  type: z.string().min(1).max(64),
  text: z.looseObject({ body: z.string() }).optional(),
});

const statusError = z.looseObject({ code: z.number().optional(), title: z.string().optional(), message: z.string().optional() });

export const deliveryStatuses = ['sent', 'delivered', 'read', 'failed'] as const;
export type DeliveryStatus = (typeof deliveryStatuses)[number];

/** A status of a message we sent: to a phone number `recipient_id` names it, to a BSUID only `recipient_user_id` may. */
const statusNotification = z.looseObject({
  id: z.string().min(1).max(256),
  status: z.string(),
  timestamp: z.string().regex(/^\d+$/),
  recipient_id: waId.optional(),
  recipient_user_id: userId.optional(),
  errors: z.array(statusError).optional(),
});

const contact = z.looseObject({
  wa_id: waId.optional().catch(undefined),
  user_id: userId.optional().catch(undefined),
  profile: z.looseObject({ name: z.string().optional().catch(undefined), username: z.string().optional().catch(undefined) }).optional().catch(undefined),
});

/** A change of the `messages` field; its messages and statuses are read one by one, so that one odd item loses only itself. */
const changeValue = z.looseObject({
  messaging_product: z.literal('whatsapp').optional(),
  metadata: z.looseObject({ phone_number_id: z.string(), display_phone_number: z.string().optional() }),
  contacts: z.array(contact).optional().catch(undefined),
  messages: z.array(z.unknown()).optional(),
  statuses: z.array(z.unknown()).optional(),
  errors: z.array(z.unknown()).optional(),
});

export const webhookNotification = z.looseObject({
  object: z.string(),
  entry: z.array(z.looseObject({ id: z.string().optional(), changes: z.array(z.looseObject({ field: z.string(), value: z.unknown() })) })),
});

export const webhookChangeValue = changeValue;
export const webhookMessage = inboundMessage;
export const webhookStatus = statusNotification;
export type WebhookContact = z.output<typeof contact>;
export type InboundWhatsappMessage = z.output<typeof inboundMessage>;
export type StatusNotification = z.output<typeof statusNotification>;

/** The GET verification handshake's query (`hub.mode=subscribe&hub.verify_token=…&hub.challenge=…`). */
export const handshakeQuery = z.object({
  'hub.mode': z.string().optional(),
  'hub.verify_token': z.string().optional(),
  'hub.challenge': z.string().max(256).optional(),
});

// ---- The inbound queue's messages ----------------------------------------------------------------------------

export const whatsappQueueMessage = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('message'),
    orgId: z.string(),
    numberId: z.uuid(),
    customer: z
      .object({ waId: waId.optional(), userId: userId.optional(), name: z.string().optional(), username: z.string().optional() })
      .refine((customer) => customer.waId !== undefined || customer.userId !== undefined, { error: 'names no WhatsApp user' }),
    message: inboundMessage,
  }),
  z.object({ kind: z.literal('status'), orgId: z.string(), numberId: z.uuid(), status: statusNotification }),
]);
export type WhatsappQueueMessage = z.output<typeof whatsappQueueMessage>;
/** The customer of a message: phone number and BSUID as Meta gave them (at least one), and their names. */
export type WhatsappCustomer = Extract<WhatsappQueueMessage, { kind: 'message' }>['customer'];

/**
 * Who a customer is to this platform: their BSUID when Meta gives one (stable whether or not they share their
 * number, Meta's advice), their phone number otherwise. Their session and their FIFO group are keyed by it.
 */
export const customerKey = (customer: { waId?: string | undefined; userId?: string | undefined }): string => (customer.userId ?? customer.waId) as string;

/** One WhatsApp message the platform sent (or tried to) for an assistant reply: `metadata.whatsapp.sends[i]`. */
export interface WhatsappSend {
  /** Meta's message id, once accepted. */
  wamid?: string | undefined;
  chars: number;
  status: DeliveryStatus | 'refused';
  attempts: number;
  updatedAt: string;
  error?: { code: string; message: string } | undefined;
}
