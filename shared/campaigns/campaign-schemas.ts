import * as z from 'zod';
import { isKnownTimeZone, minutesOf, weekdays } from './campaign-windows.ts';
import { jsonRecord, paginationQuery, requiredText, timestamp } from '../platform/schemas/common.ts';
import { storableJsonObject } from '../platform/schemas/storable-json.ts';
import { callTtlBounds } from '../voice/voice-schemas.ts';

export const campaignStatuses = ['DRAFT', 'SCHEDULED', 'RUNNING', 'PAUSED', 'COMPLETED', 'CANCELED'] as const;
export type CampaignStatus = (typeof campaignStatuses)[number];

/** The outcomes of an attempt that a campaign may retry. */
export const retryableOutcomes = ['BUSY', 'NO_ANSWER', 'FAILED'] as const;
export type RetryableOutcome = (typeof retryableOutcomes)[number];
/** What became of one dial: answered (the conversation happened), or one of the retryable failures. */
export const attemptOutcomes = ['ANSWERED', ...retryableOutcomes] as const;
export type AttemptOutcome = (typeof attemptOutcomes)[number];

/** Where a contact of a campaign stands. */
export const campaignContactStates = ['PENDING', 'IN_PROGRESS', 'COMPLETED', 'FAILED', 'EXHAUSTED', 'SKIPPED_DNC'] as const;
export type CampaignContactState = (typeof campaignContactStates)[number];

/** Bounds (decision 274): a campaign's own cap never exceeds what one dispatcher sustains; audiences are bounded. */
export const campaignLimits = { maxConcurrentCalls: 100, maxAttempts: 10, maxDelaySeconds: 7 * 24 * 60 * 60, maxAudience: 100_000, maxContactIds: 1000 } as const;

const timeZone = z.string().refine(isKnownTimeZone, { error: 'must be an IANA time zone such as Europe/Berlin' });
const wallClock = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$|^24:00$/, { error: 'must be HH:MM (00:00 to 24:00)' });

const callingWindow = z
  .strictObject({ days: z.array(z.enum(weekdays)).min(1).max(7), start: wallClock, end: wallClock })
  .refine((window) => minutesOf(window.start) < minutesOf(window.end), { error: 'end must be after start (a window spans one local day)', path: ['end'] });

const schedule = z
  .strictObject({
    startAt: timestamp,
    endAt: timestamp.optional(),
    windows: z.array(callingWindow).min(1).max(14),
    timezoneMode: z.enum(['callee', 'fixed']).default('callee'),
    /** The zone of `fixed` mode, and in `callee` mode the zone of contacts whose own zone is unknown (default UTC). */
    timezone: timeZone.optional(),
  })
  .refine((value) => value.endAt === undefined || Date.parse(value.endAt) > Date.parse(value.startAt), { error: 'must be after startAt', path: ['endAt'] })
  .refine((value) => value.timezoneMode === 'callee' || value.timezone !== undefined, { error: 'is required when timezoneMode is fixed', path: ['timezone'] });

const retry = z.strictObject({
  maxAttempts: z.int().min(1).max(campaignLimits.maxAttempts).default(1),
  delaySeconds: z.int().min(0).max(campaignLimits.maxDelaySeconds).default(3600),
  on: z.array(z.enum(retryableOutcomes)).max(3).default([]),
});

const audience = z
  .strictObject({
    contactIds: z.array(z.uuid({ error: 'must be a UUID' })).max(campaignLimits.maxContactIds).optional(),
    tags: z.array(z.string().trim().min(1).max(64)).max(20).optional(),
  })
  .refine((value) => (value.contactIds?.length ?? 0) + (value.tags?.length ?? 0) > 0, { error: 'must name contactIds or tags' });

export const createCampaignBody = z.strictObject({
  name: requiredText(200),
  agentId: z.uuid({ error: 'must be a UUID' }),
  phoneNumberId: z.uuid({ error: 'must be a UUID' }),
  audience,
  schedule,
  maxConcurrentCalls: z.int().min(1).max(campaignLimits.maxConcurrentCalls).default(1),
  retry: retry.default({ maxAttempts: 1, delaySeconds: 3600, on: [] }),
  ttl: z.int().min(callTtlBounds.min).max(callTtlBounds.max).default(callTtlBounds.default),
  sessionVariables: storableJsonObject({ maxBytes: 16 * 1024, key: z.string().min(1).max(256) }).default({}),
});
export type CreateCampaignInput = z.output<typeof createCampaignBody>;
export type CampaignSchedule = CreateCampaignInput['schedule'];
export type CampaignRetry = CreateCampaignInput['retry'];

export const campaignProgress = z.object({
  total: z.int().min(0),
  pending: z.int().min(0),
  inProgress: z.int().min(0),
  completed: z.int().min(0),
  failed: z.int().min(0),
  skippedDnc: z.int().min(0),
  exhausted: z.int().min(0),
});
export type CampaignProgress = z.output<typeof campaignProgress>;

export const campaignRecord = z.object({
  id: z.uuid(),
  name: z.string(),
  agentId: z.uuid(),
  phoneNumberId: z.uuid(),
  audience: z.object({ contactIds: z.array(z.string()).optional(), tags: z.array(z.string()).optional() }),
  schedule: z.object({
    startAt: timestamp,
    endAt: timestamp.optional(),
    windows: z.array(z.object({ days: z.array(z.enum(weekdays)), start: z.string(), end: z.string() })),
    timezoneMode: z.enum(['callee', 'fixed']),
    timezone: z.string().optional(),
  }),
  maxConcurrentCalls: z.int(),
  retry: z.object({ maxAttempts: z.int(), delaySeconds: z.int(), on: z.array(z.enum(retryableOutcomes)) }),
  ttl: z.int(),
  sessionVariables: jsonRecord,
  status: z.enum(campaignStatuses),
  progress: campaignProgress,
  createdAt: timestamp,
  updatedAt: timestamp,
  startedAt: timestamp.optional(),
  completedAt: timestamp.optional(),
});
export type Campaign = z.output<typeof campaignRecord>;

export const campaignList = z.object({
  data: z.array(campaignRecord),
  pagination: z.object({ page: z.int().min(1), limit: z.int().min(1), total: z.int().min(0), totalPages: z.int().min(0) }),
});

export const listCampaignsQuery = paginationQuery.extend({ status: z.enum(campaignStatuses).optional() });

export const campaignCallsQuery = z.object({
  limit: paginationQuery.shape.limit,
  cursor: z.string().max(2048).optional(),
  state: z.enum(campaignContactStates).optional(),
});

export const campaignAttempt = z.object({
  attempt: z.int().min(1),
  sessionId: z.uuid(),
  startedAt: timestamp,
  outcome: z.enum(attemptOutcomes).optional(),
});
export type CampaignAttempt = z.output<typeof campaignAttempt>;

export const campaignCall = z.object({
  contactId: z.string(),
  phoneNumber: z.string(),
  timezone: z.string(),
  state: z.enum(campaignContactStates),
  attempts: z.int().min(0),
  lastOutcome: z.enum(attemptOutcomes).optional(),
  nextAttemptAt: timestamp.optional(),
  sessions: z.array(campaignAttempt),
});
export type CampaignCall = z.output<typeof campaignCall>;

export const campaignCallList = z.object({ data: z.array(campaignCall), nextCursor: z.string().optional() });
