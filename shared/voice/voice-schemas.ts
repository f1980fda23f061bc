import * as z from 'zod';
import { booleanQuery, e164, optionalText } from '../platform/schemas/common.ts';
import { storableJsonObject } from '../platform/schemas/storable-json.ts';

export const telephonyProviders = ['twilio'] as const;

/** Bounds of an outbound call's `ttl` (seconds): long enough to say hello, short of the idle window (decision 122). */
export const callTtlBounds = { min: 10, max: 1800, default: 100 } as const;

export const phoneNumberParams = z.object({ phone_number_id: z.uuid({ error: 'must be a UUID' }) });

export const listPhoneNumbersQuery = z.object({
  size: z
    .string()
    .optional()
    .transform((raw) => {
      const parsed = raw !== undefined && /^\d+$/.test(raw.trim()) ? Number(raw) : Number.NaN;
      return Number.isSafeInteger(parsed) ? Math.min(Math.max(parsed, 1), 500) : 50;
    }),
});

/** What a number is set up with, whether imported or bought: its label, the agent that answers it, inbound recording. */
const numberSettings = {
  label: optionalText(200).optional(),
  /** The agent that answers calls to this number; without it, inbound calls are refused. */
  agentId: z.uuid({ error: 'must be a UUID' }).optional(),
  /** Inbound calls to this number are recorded (copied to our bucket, deleted at the carrier), as outbound calls are. */
  record_inbound_calls: z.boolean().default(false),
};

export const createPhoneNumberBody = z.strictObject({
  phone_number: e164,
  provider: z.enum(telephonyProviders).default('twilio'),
  ...numberSettings,
});

/** US and Canadian area codes (NPA): three digits, the first 2–9. */
const areaCode = z.string().trim().regex(/^[2-9]\d{2}$/, { error: 'must be a US or Canadian area code such as 415' });

/** Buy a number: the one a search offered (`phone_number`), or any in a US or Canadian area code (`area_code`). */
export const buyPhoneNumberBody = z
  .strictObject({
    phone_number: e164.optional(),
    area_code: areaCode.optional(),
    ...numberSettings,
  })
  .refine((body) => (body.phone_number === undefined) !== (body.area_code === undefined), { error: 'give either phone_number or area_code', path: ['phone_number'] });

export const updatePhoneNumberBody = z
  .strictObject({
    label: optionalText(200).nullable(),
    agentId: z.uuid({ error: 'must be a UUID' }).nullable(),
    record_inbound_calls: z.boolean(),
  })
  .partial()
  .refine((body) => Object.keys(body).length > 0, { error: 'must change at least one field' });

/** `release=true` gives the number back to the carrier too (it stops being billed, and can be bought by anyone). */
export const deletePhoneNumberQuery = z.object({ release: booleanQuery.default(false) });

/** The kinds of numbers a search can ask for: Twilio's `Local`, `Mobile` and `TollFree` lists. */
export const availableNumberTypes = ['local', 'mobile', 'toll_free'] as const;
export type AvailableNumberType = (typeof availableNumberTypes)[number];

/**
 * Twilio's search filters (AvailablePhoneNumbers), in snake_case. Strict: a filter spelled wrong would otherwise
 * be dropped and the search answered with numbers from anywhere; it is named in the 400's details.
 */
const searchFilters = {
  country: z.string().trim().regex(/^[A-Za-z]{2}$/, { error: 'must be an ISO 3166-1 alpha-2 country code such as US' }).transform((code) => code.toUpperCase()).default('US'),
  type: z.enum(availableNumberTypes).default('local'),
  area_code: areaCode.optional(),
  /** Digits, letters (as on a keypad) and `*` (any one digit), at least two: Twilio's `Contains`. */
  contains: z.string().trim().regex(/^[0-9A-Za-z*]{2,16}$/, { error: 'must be 2–16 digits, letters or *' }).optional(),
  region: z.string().trim().regex(/^[A-Za-z]{2}$/, { error: 'must be a two-letter state or province such as CA' }).transform((code) => code.toUpperCase()).optional(),
  postal_code: z.string().trim().regex(/^[A-Za-z0-9][A-Za-z0-9 -]{0,11}$/, { error: 'must be a postal code' }).optional(),
  locality: z.string().trim().min(1).max(64).optional(),
  near_number: e164.optional(),
  /** Miles around `near_number` (Twilio's default is 25). */
  distance: z.string().trim().regex(/^\d{1,3}$/, { error: 'must be a whole number of miles' }).transform(Number).pipe(z.number().max(500, { error: 'must be at most 500' })).optional(),
  size: z
    .string()
    .optional()
    .transform((raw) => {
      const parsed = raw !== undefined && /^\d+$/.test(raw.trim()) ? Number(raw) : Number.NaN;
      return Number.isSafeInteger(parsed) ? Math.min(Math.max(parsed, 1), 50) : 20;
    }),
};

export const searchAvailableNumbersQuery = z
  .looseObject(searchFilters)
  .superRefine((query, context) => {
    for (const name of Object.keys(query)) {
      if (!(name in searchFilters)) context.addIssue({ code: 'custom', path: [name], message: 'is not a search filter (they are snake_case, such as area_code)' });
    }
    if (query.distance !== undefined && query.near_number === undefined) context.addIssue({ code: 'custom', path: ['distance'], message: 'needs near_number' });
  });

export const twilioCredentialsBody = z.strictObject({
  accountSid: z.string().trim().regex(/^AC[0-9a-f]{32}$/, { error: 'must be a Twilio account SID (AC followed by 32 hex characters)' }),
  authToken: z.string().trim().regex(/^[0-9a-f]{32}$/, { error: 'must be a Twilio auth token (32 hex characters)' }),
});

export const startCallBody = z.strictObject({
  to_phone_number: e164,
  agent_id: z.uuid({ error: 'must be a UUID' }),
  ttl: z.number().int().min(callTtlBounds.min).max(callTtlBounds.max).default(callTtlBounds.default),
  session_variables: storableJsonObject({ maxBytes: 16 * 1024, key: z.string().min(1).max(256) }).default({}),
});

/** A voice session from the browser (docs/voice.md#voice-sessions-from-the-browser): the agent, its time limit, its variables. */
export const startVoiceSessionBody = z.strictObject({
  agentId: z.uuid({ error: 'must be a UUID' }),
  ttl: z.number().int().min(callTtlBounds.min).max(callTtlBounds.max).default(callTtlBounds.default),
  sessionVariables: storableJsonObject({ maxBytes: 16 * 1024, key: z.string().min(1).max(256) }).default({}),
});

/** Where to connect, with what: the single-use token opens `url` once, until `expiresAt`. */
export const voiceSessionResponse = z.object({ sessionId: z.uuid(), url: z.string(), token: z.string(), expiresAt: z.iso.datetime() });

export type CreatePhoneNumberInput = z.output<typeof createPhoneNumberBody>;
export type BuyPhoneNumberInput = z.output<typeof buyPhoneNumberBody>;
export type SearchAvailableNumbersInput = z.output<typeof searchAvailableNumbersQuery>;
export type UpdatePhoneNumberInput = z.output<typeof updatePhoneNumberBody>;
export type TwilioCredentialsInput = z.output<typeof twilioCredentialsBody>;
export type StartCallInput = z.output<typeof startCallBody>;
export type StartVoiceSessionInput = z.output<typeof startVoiceSessionBody>;
export type VoiceSessionGrant = z.output<typeof voiceSessionResponse>;

export interface PhoneNumber {
  id: string;
  phone_number: string;
  provider: (typeof telephonyProviders)[number];
  label?: string | undefined;
  agentId?: string | undefined;
  record_inbound_calls: boolean;
  createdAt: string;
  updatedAt: string;
}

export const phoneNumberRecord = z.object({
  id: z.uuid(),
  phone_number: z.string(),
  provider: z.enum(telephonyProviders),
  label: z.string().optional(),
  agentId: z.uuid().optional(),
  record_inbound_calls: z.boolean(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

/** A number a search found: buy it with `POST /api/v1/phone-numbers/buy {phone_number}`. */
export const availablePhoneNumberRecord = z.object({
  phone_number: z.string(),
  friendly_name: z.string(),
  iso_country: z.string(),
  locality: z.string().optional(),
  region: z.string().optional(),
  postal_code: z.string().optional(),
  /** Whether buying it needs an address on file at the carrier: `none`, `any`, `local` or `foreign`. */
  address_requirements: z.string(),
  capabilities: z.object({ voice: z.boolean(), sms: z.boolean(), mms: z.boolean() }),
});

export type AvailablePhoneNumber = z.output<typeof availablePhoneNumberRecord>;

export const availablePhoneNumberList = z.object({ items: z.array(availablePhoneNumberRecord) });

export const phoneNumberList = z.object({ items: z.array(phoneNumberRecord) });

export const twilioCredentialsRecord = z.object({ provider: z.literal('twilio'), accountSid: z.string(), updatedAt: z.string() });

export const startCallResponse = z.object({ sessionId: z.uuid() });

/** Call statuses as Twilio reports them. */
export const twilioCallStatuses = ['queued', 'initiated', 'ringing', 'in-progress', 'completed', 'busy', 'no-answer', 'failed', 'canceled'] as const;
export type TwilioCallStatus = (typeof twilioCallStatuses)[number];

/** A voice call: the session's carrier side, in the session's partition. */
export interface VoiceCall {
  orgId: string;
  sessionId: string;
  /** The number the call is on; empty for a browser's voice session, which has none. */
  phoneNumberId: string;
  /** `web`: a voice session from the browser, through the media worker with no carrier. */
  provider: 'twilio' | 'web';
  direction: 'INBOUND' | 'OUTBOUND';
  from: string;
  to: string;
  ttl: number;
  callSid?: string | undefined;
  status: TwilioCallStatus;
  startedAt: string;
  answeredAt?: string | undefined;
  /** Set when the agent asked the carrier to hang up, so that the carrier's `completed` is read as the agent's. */
  agentHangupAt?: string | undefined;
  /** The recording's object key in the recordings bucket, once copied there. */
  recordingKey?: string | undefined;
  recordingSid?: string | undefined;
}
