import * as z from 'zod';
import { analysisResultSchema, type AnalysisResult } from './analysis-result-schemas.ts';
import { instant, jsonRecord, pageCounts, pageOf, paginationQuery, sortQuery, timestamp } from '../platform/schemas/common.ts';
import { storableJsonObject } from '../platform/schemas/storable-json.ts';
import { retrievedChunkSchema } from '../knowledge/knowledge-schemas.ts';

export const sessionPlatforms = ['SDK', 'WEB', 'WHATSAPP', 'VOICE', 'PHONE'] as const;
/** Platforms a client may name when it opens a chat session; `PHONE` sessions are calls, opened by the platform. */
export const chatPlatforms = ['SDK', 'WEB', 'WHATSAPP', 'VOICE'] as const;
export const sessionStates = ['OPEN', 'CLOSED', 'EXPIRED'] as const;
export const messageRoles = ['USER', 'ASSISTANT', 'TOOL', 'SYSTEM'] as const;
export const maxMessageChars = 32_000;

const jsonObject = storableJsonObject({ maxBytes: 16 * 1024, key: z.string().min(1).max(256) });

export const createSessionBody = z.strictObject({
  agentId: z.uuid({ error: 'must be a UUID' }),
  metadata: jsonObject.default({}),
  platform: z.enum(chatPlatforms).default('SDK'),
  sessionVariables: jsonObject.default({}),
});

export const sendMessageBody = z.strictObject({
  content: z.string().refine((text) => text.trim().length > 0, { error: 'must not be empty' }).pipe(z.string().max(maxMessageChars)),
  stream: z.boolean().default(true),
  metadata: jsonObject.default({}),
});

export const listSessionsQuery = paginationQuery.extend({
  sort: sortQuery(['createdAt'], 'createdAt:desc'),
  agentId: z.uuid({ error: 'must be a UUID' }).optional(),
  state: z.enum(sessionStates).optional(),
  platform: z.enum(sessionPlatforms).optional(),
  createdAfter: timestamp.optional(),
  /** The `nextCursor` of the previous page: the next page is then read from where that one ended. */
  cursor: z.string().max(1024).optional(),
});

export const listMessagesQuery = paginationQuery;

export type CreateSessionInput = z.output<typeof createSessionBody>;
export type SendMessageInput = z.output<typeof sendMessageBody>;
export type ListSessionsQuery = z.output<typeof listSessionsQuery>;

export type SessionState = (typeof sessionStates)[number];
export type MessageRole = (typeof messageRoles)[number];
/** Chat: the first three. Calls: how the call ended (docs/voice.md#endedreason). */
export const endedReasons = ['USER_CLOSED', 'AGENT_ENDED', 'EXPIRED', 'HANGUP_CALLEE', 'HANGUP_AGENT', 'TTL', 'NO_ANSWER', 'BUSY', 'FAILED', 'CANCELED', 'CONNECTION_LOST', 'CARRIER_SILENT', 'TRANSFERRED'] as const;
export type EndedReason = (typeof endedReasons)[number];

export interface Session {
  id: string;
  orgId: string;
  agentId: string;
  /** The version of a `MANUAL` agent the session is bound to for its whole life; absent: it follows the published version. */
  agentVersion?: number | undefined;
  type: 'CHAT' | 'VOICE';
  direction: 'INBOUND' | 'OUTBOUND';
  platform: (typeof sessionPlatforms)[number];
  state: SessionState;
  metadata: Record<string, unknown> & { sessionVariables: Record<string, unknown> };
  createdAt: string;
  updatedAt: string;
  lastActivityAt: string;
  endedAt?: string | undefined;
  endedReason?: EndedReason | undefined;
  messageCount: number;
  /** The post-session analysis, once made (docs/analysis.md). */
  analysis?: AnalysisResult | undefined;
  /** Calls: our own address of the recording (`GET /v1/chat/sessions/{id}/recording`), never the carrier's. */
  recordingUrl?: string | undefined;
}

export interface ToolCallRecord {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
  result: string;
  status: 'SUCCESS' | 'ERROR';
  durationMs: number;
}

export interface Message {
  id: string;
  sessionId: string;
  role: MessageRole;
  content: string;
  toolCall?: ToolCallRecord | undefined;
  metadata: Record<string, unknown>;
  createdAt: string;
}

export const sessionSchema = z.object({
  id: z.uuid(),
  orgId: z.string(),
  agentId: z.uuid(),
  agentVersion: z.int().min(1).optional(),
  type: z.enum(['CHAT', 'VOICE']),
  direction: z.enum(['INBOUND', 'OUTBOUND']),
  platform: z.enum(sessionPlatforms),
  state: z.enum(sessionStates),
  metadata: z.object({ sessionVariables: jsonRecord }).catchall(z.unknown()),
  createdAt: instant,
  updatedAt: instant,
  lastActivityAt: instant,
  endedAt: instant.optional(),
  endedReason: z.enum(endedReasons).optional(),
  messageCount: z.int().min(0),
  analysis: analysisResultSchema.optional(),
  recordingUrl: z.string().optional(),
}) satisfies z.ZodType<Session>;

/** With `nextCursor` while more follow: pass it as `cursor` to read the next page from where this one ended. */
export const sessionPage = z.object({
  data: z.array(sessionSchema),
  pagination: pageCounts.extend({ nextCursor: z.string().optional() }),
});

const toolCallRecordSchema = z.object({
  id: z.string(),
  name: z.string(),
  arguments: jsonRecord,
  result: z.string(),
  status: z.enum(['SUCCESS', 'ERROR']),
  durationMs: z.number().min(0),
}) satisfies z.ZodType<ToolCallRecord>;

/** An assistant message's `metadata.timings`: where the reply's time went, in milliseconds. */
const turnTimingsSchema = z.object({
  modelFirstTokenMs: z.number(),
  modelTotalMs: z.number(),
  tools: z.array(z.object({ name: z.string(), durationMs: z.number() })),
  platformMs: z.number(),
  totalMs: z.number(),
  /** Knowledge retrieval, when the agent has a store. */
  retrieval: z.number().optional(),
});

/** An `sts` or `hybrid` call's reply: which model answered it, and why (docs/voice.md#hybrid). */
export const voiceTurnSchema = z.object({
  mode: z.enum(['sts', 'hybrid']),
  answeredBy: z.enum(['sts', 'llm']).describe('`sts`: the speech-to-speech model alone; `llm`: the agent\'s text LLM took the turn, and the speech-to-speech model said its answer'),
  reason: z.string(),
  stsModelId: z.string(),
  /** With `answeredBy: llm`. */
  llmModelId: z.string().optional(),
});

export const messageSchema = z.object({
  id: z.string(),
  sessionId: z.uuid(),
  role: z.enum(messageRoles),
  content: z.string(),
  toolCall: toolCallRecordSchema.optional(),
  /** The client's metadata on USER messages; on ASSISTANT messages the model, `timings`, `status` and, in a speech-to-speech call, `voice`. */
  metadata: z.object({ timings: turnTimingsSchema.optional(), voice: voiceTurnSchema.optional() }).catchall(z.unknown()),
  createdAt: instant,
}) satisfies z.ZodType<Message>;

export const messagePage = pageOf(messageSchema);

/** The reply to a message sent with `stream: false`. */
export const sentMessageSchema = z.object({
  userMessage: messageSchema,
  toolMessages: z.array(messageSchema),
  assistantMessage: messageSchema,
});

/** A knowledge chunk an assistant message drew on: `metadata.citations` and a streamed reply's citations event. */
export const citationSchema = retrievedChunkSchema.pick({ documentId: true, documentName: true, chunkId: true, score: true, page: true });
export type Citation = z.output<typeof citationSchema>;

/**
 * One `data:` event of a streamed reply: a text delta of the assistant message, or, if the turn fails after the
 * stream began, an error in the envelope's shape. The stream ends with `data: [DONE]`. The turn of an agent with a
 * knowledge store sends its citations just before, with an empty delta, so that a client that appends every
 * event's delta is unaffected (docs/sessions.md#streamed-citations).
 */
export const replyEventSchema = z.union([
  z.object({
    id: z.string(),
    delta: z.string(),
    citations: z.array(citationSchema).optional().describe("The reply's knowledge citations, as its metadata.citations; in the last event before [DONE], whose delta is empty"),
  }),
  z.object({
    error: z.object({ code: z.string(), message: z.string(), status: z.int() }),
    meta: z.object({ requestId: z.string(), timestamp: instant }),
  }),
]);

/** The answer to a re-run request: the analysis job it queued. */
export const analysisRerunSchema = z.object({ sessionId: z.uuid(), jobId: z.uuid(), requestedAt: instant });
