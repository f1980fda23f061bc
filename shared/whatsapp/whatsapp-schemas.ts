import * as z from 'zod';
import { optionalText, pageOf, paginationQuery } from '../platform/schemas/common.ts';
import { storableJsonObject } from '../platform/schemas/storable-json.ts';

/** Meta's id of a business phone number (digits; the Graph API path names it). */
export const metaPhoneNumberId = z.string().trim().regex(/^\d{5,30}$/, { error: 'must be the phone number id Meta shows (digits)' });

/** WhatsApp's own limit of a text message's body; longer replies are split (docs/whatsapp.md#limits). */
export const whatsappTextLimit = 4096;

/**
 * The reply to a message the agent cannot read (a location, a contact card, a reaction…; text and media are read)
 * when the number sets none.
 */
export const defaultUnsupportedReply = 'Sorry, I cannot read this kind of message. Could you write your question?';

/**
 * The media a customer can send and WhatsApp's size limit of each (Meta's "Supported media types": audio and video
 * 16 MB, documents 100 MB, images 5 MB, stickers 500 KB animated), the most the platform downloads.
 * https://developers.facebook.com/docs/whatsapp/cloud-api/reference/media#supported-media-types
 */
export const mediaLimits = {
  image: 5 * 1024 * 1024,
  sticker: 500 * 1024,
  audio: 16 * 1024 * 1024,
  video: 16 * 1024 * 1024,
  document: 100 * 1024 * 1024,
} as const;
export type MediaKind = keyof typeof mediaLimits;
export const isMediaKind = (type: string): type is MediaKind => Object.hasOwn(mediaLimits, type);

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

/**
 * A media object of a message (`image`, `sticker`, `audio`, `video`, `document`): Meta's id to download it with, and
 * what it says of it. Every field is optional here: a message is never dropped for a detail of its media.
 */
const mediaObject = z.looseObject({
  id: z.string().max(256).optional(),
  mime_type: z.string().max(256).optional(),
  sha256: z.string().max(256).optional(),
  caption: z.string().max(4096).optional(),
  filename: z.string().max(1024).optional(),
  /** An audio recorded in WhatsApp (a voice note), not a file sent. */
  voice: z.boolean().optional(),
});
export type MediaObject = z.output<typeof mediaObject>;

const inboundMessage = z.looseObject({
  from: waId.optional(),
  from_user_id: userId.optional(),
  id: z.string().min(1).max(256),
  timestamp: z.string().regex(/^\d+$/),
  type: z.string().min(1).max(64),
  text: z.looseObject({ body: z.string() }).optional(),
  image: mediaObject.optional(),
  sticker: mediaObject.optional(),
  audio: mediaObject.optional(),
  video: mediaObject.optional(),
  document: mediaObject.optional(),
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
  /** The text's characters (a template message sends no text of ours). */
  chars?: number | undefined;
  status: DeliveryStatus | 'refused';
  attempts: number;
  updatedAt: string;
  error?: { code: string; message: string } | undefined;
}

// ---- Template messages: how a business starts a conversation ------------------------------------------------

const storableTemplate = storableJsonObject({ maxBytes: 16 * 1024 });

/**
 * A parameter of a template component as Meta documents it (`text`, `currency`, `date_time`, `image`, `document`,
 * `video`, `payload`…). Any string in it may name session variables, `{{orderId}}`; a named parameter
 * (`parameter_name`, templates with named parameters) without `text` takes the session variable of its name.
 */
const templateParameter = z.looseObject({
  type: z.string().trim().min(1).max(32),
  parameter_name: z.string().regex(/^[a-z0-9_]{1,128}$/, { error: 'must be the parameter name of the template (lowercase letters, digits, underscores)' }).optional(),
  text: z.string().max(32_768).optional(),
});

const templateComponent = z.looseObject({
  type: z.string().trim().min(1).max(32),
  parameters: z.array(templateParameter).max(100).optional(),
});

/**
 * The `template` object of Meta's `POST /{phone-number-id}/messages` with `type: "template"`, as Meta documents it
 * (https://developers.facebook.com/docs/whatsapp/cloud-api/guides/send-message-templates): the approved template's
 * name, its language, and the components that fill its parameters.
 */
export const whatsappTemplate = z
  .strictObject({
    name: z.string().regex(/^[a-z0-9_]{1,512}$/, { error: 'must be the name of an approved template (lowercase letters, digits, underscores)' }),
    language: z.strictObject({
      code: z.string().regex(/^[a-z]{2,3}(_[A-Za-z]{2,4})?$/, { error: "must be the template's language code, such as en_US or pt_BR" }),
      policy: z.literal('deterministic').optional(),
    }),
    components: z.array(templateComponent).max(20).optional(),
  })
  .superRefine((template, ctx) => {
    const checked = storableTemplate.safeParse(template);
    for (const issue of checked.success ? [] : checked.error.issues) ctx.addIssue({ code: 'custom', path: issue.path, message: issue.message });
  });
export type WhatsappTemplate = z.output<typeof whatsappTemplate>;

export const startConversationBody = z.strictObject({
  /** The customer's WhatsApp number: country code and number (`+`, spaces and dashes are ignored). */
  to: z
    .string()
    .transform((value) => value.replace(/[\s()+-]/g, ''))
    .pipe(z.string().regex(/^\d{6,20}$/, { error: 'must be a phone number with its country code, such as +31 6 1234 5678' })),
  template: whatsappTemplate,
  /** Fill the template's parameters (`{{name}}`, named parameters) and the agent's prompt, as a chat session's do. */
  sessionVariables: storableJsonObject({ maxBytes: 16 * 1024, key: z.string().min(1).max(256) }).default({}),
  /** The agent that answers the customer's reply; the number's agent by default. */
  agentId: z.uuid({ error: 'must be a UUID' }).optional(),
});
export type StartConversationInput = z.output<typeof startConversationBody>;

export const startConversationResponse = z.object({
  sessionId: z.uuid(),
  /** Meta's id of the template message. */
  wamid: z.string(),
  /** The customer's WhatsApp id as Meta resolved the number (their replies come from it). */
  to: z.string(),
});

/** `GET /v1/chat/sessions/{id}/media/{mediaId}`: a media the customer sent in that session (Meta's media id). */
export const sessionMediaParams = z.object({
  id: z.uuid({ error: 'must be a UUID' }),
  mediaId: z.string().regex(/^[A-Za-z0-9_.-]{1,128}$/, { error: "must be the media's id (metadata.whatsapp.media.id)" }),
});
