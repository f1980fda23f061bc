import * as z from 'zod';
import { optionalText } from '../platform/schemas/common.ts';
import { storableJsonObject } from '../platform/schemas/storable-json.ts';

/** E.164: `+`, a country code that does not start with 0, at most 15 digits in all. */
export const e164 = z.string().trim().regex(/^\+[1-9]\d{6,14}$/, { error: 'must be an E.164 number such as +15550100' });

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

export const createPhoneNumberBody = z.strictObject({
  phone_number: e164,
  provider: z.enum(telephonyProviders).default('twilio'),
  label: optionalText(200).optional(),
  /** The agent that answers calls to this number; without it, inbound calls are refused. */
  agentId: z.uuid({ error: 'must be a UUID' }).optional(),
});

export const updatePhoneNumberBody = z
  .strictObject({
    label: optionalText(200).nullable(),
    agentId: z.uuid({ error: 'must be a UUID' }).nullable(),
  })
  .partial()
  .refine((body) => Object.keys(body).length > 0, { error: 'must change at least one field' });

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

export type CreatePhoneNumberInput = z.output<typeof createPhoneNumberBody>;
export type UpdatePhoneNumberInput = z.output<typeof updatePhoneNumberBody>;
export type TwilioCredentialsInput = z.output<typeof twilioCredentialsBody>;
export type StartCallInput = z.output<typeof startCallBody>;

export interface PhoneNumber {
  id: string;
  phone_number: string;
  provider: (typeof telephonyProviders)[number];
  label?: string | undefined;
  agentId?: string | undefined;
  createdAt: string;
  updatedAt: string;
}

export const phoneNumberRecord = z.object({
  id: z.uuid(),
  phone_number: z.string(),
  provider: z.enum(telephonyProviders),
  label: z.string().optional(),
  agentId: z.uuid().optional(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

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
  phoneNumberId: string;
  provider: 'twilio';
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
