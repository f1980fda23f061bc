import * as z from 'zod';
import { analysisResultSchema } from '../conversations/analysis-result-schemas.ts';
import { campaignProgress, campaignStatuses } from '../campaigns/campaign-schemas.ts';
import { replayUsage } from '../conversations/replay-schemas.ts';

/**
 * Every domain event of the spec, one zod schema per payload. `session.*` keep the spec's flat shape (the top-level
 * `id` is the session id); the envelope events (`message.added`, `usage.updated`, …) use the event id as `id` and
 * carry their data under `data`. Every payload also has `eventId`, the event's own id, stable across retries.
 */
const timestamp = z.iso.datetime({ offset: true });
const sessionFields = {
  id: z.string(),
  eventId: z.string(),
  type: z.enum(['CHAT', 'VOICE']),
  platform: z.string(),
  direction: z.enum(['INBOUND', 'OUTBOUND']),
  agentId: z.string(),
  createdAt: timestamp,
  updatedAt: timestamp,
  lastActivityAt: timestamp,
  metadata: z.object({ sessionVariables: z.record(z.string(), z.unknown()) }).catchall(z.unknown()),
};
const envelope = <Data extends z.ZodType>(type: string, data: Data) =>
  z.object({ id: z.string(), eventId: z.string(), type: z.literal(type), createdAt: timestamp, data });

export const eventSchemas = {
  'session.created': z.object({ ...sessionFields, eventType: z.literal('session.created'), state: z.literal('OPEN') }),
  'session.ended': z.object({
    ...sessionFields,
    eventType: z.literal('session.ended'),
    state: z.enum(['CLOSED', 'EXPIRED']),
    endedAt: timestamp,
    analysis: analysisResultSchema,
    recordingUrl: z.string().optional(),
  }),
  'session.closed': z.object({ ...sessionFields, eventType: z.literal('session.closed'), state: z.literal('CLOSED'), endedAt: timestamp }),
  'session.updated': z.object({
    id: z.string(),
    eventId: z.string(),
    eventType: z.literal('session.updated'),
    createdAt: timestamp,
    changedFields: z.array(z.string()),
    state: z.enum(['OPEN', 'CLOSED', 'EXPIRED']),
  }),
  'session.message.created': z.object({
    id: z.string(),
    eventId: z.string(),
    eventType: z.literal('session.message.created'),
    createdAt: timestamp,
    messageId: z.string(),
    role: z.literal('USER'),
    content: z.string(),
  }),
  'message.added': envelope(
    'message.added',
    z.object({
      sessionId: z.string(),
      messageId: z.string(),
      role: z.enum(['USER', 'ASSISTANT', 'TOOL', 'SYSTEM']),
      content: z.string(),
      toolCall: z.record(z.string(), z.unknown()).optional(),
    }),
  ),
  'usage.updated': envelope(
    'usage.updated',
    z.object({
      period: z.object({ start: timestamp, end: timestamp }),
      metrics: z.object({ chat_messages: z.number(), voice_seconds: z.number(), knowledge_chunks: z.number() }),
    }),
  ),
  'subscription.updated': envelope(
    'subscription.updated',
    z.object({ subscriptionId: z.string(), status: z.enum(['active', 'past_due', 'canceled', 'paused']), currentPlan: z.string() }),
  ),
  'campaign.updated': envelope(
    'campaign.updated',
    z.object({
      campaignId: z.string(),
      name: z.string(),
      status: z.enum(campaignStatuses),
      previousStatus: z.enum(campaignStatuses),
      progress: campaignProgress,
    }),
  ),
  'knowledge_store.updated': envelope(
    'knowledge_store.updated',
    z.object({ knowledgeStoreId: z.string(), documentId: z.string(), status: z.enum(['UPSERTED', 'FAILED']) }),
  ),
  'agent.updated': envelope(
    'agent.updated',
    z.object({ agentId: z.string(), version: z.int(), publishedVersion: z.int().nullable(), changedFields: z.array(z.string()) }),
  ),
  'agent.published': envelope('agent.published', z.object({ agentId: z.string(), version: z.int(), previousVersion: z.int().nullable() })),
  'replay.completed': envelope(
    'replay.completed',
    z.object({ replayId: z.string(), agentId: z.string(), status: z.enum(['COMPLETED', 'FAILED']), sessions: z.int(), turnsChanged: z.int(), usage: replayUsage }),
  ),
} as const;

export type EventType = keyof typeof eventSchemas;
export const eventTypes = Object.keys(eventSchemas) as EventType[];
