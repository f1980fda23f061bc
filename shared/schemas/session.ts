import * as z from 'zod';
import type { AnalysisResult } from './analysis.ts';
import { paginationQuery, sortQuery, timestamp } from './common.ts';
import { storableJsonObject } from './storable-json.ts';

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
});

export const listMessagesQuery = paginationQuery;

export type CreateSessionInput = z.output<typeof createSessionBody>;
export type SendMessageInput = z.output<typeof sendMessageBody>;
export type ListSessionsQuery = z.output<typeof listSessionsQuery>;

export type SessionState = (typeof sessionStates)[number];
export type MessageRole = (typeof messageRoles)[number];
/** Chat: the first three. Calls: how the call ended (docs/voice.md#endedreason). */
export const endedReasons = ['USER_CLOSED', 'AGENT_ENDED', 'EXPIRED', 'HANGUP_CALLEE', 'HANGUP_AGENT', 'TTL', 'NO_ANSWER', 'BUSY', 'FAILED', 'CANCELED', 'CONNECTION_LOST', 'CARRIER_SILENT'] as const;
export type EndedReason = (typeof endedReasons)[number];

export interface Session {
  id: string;
  orgId: string;
  agentId: string;
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
