import * as z from 'zod';
import { updateAgentBody } from '../agents/agent-schemas.ts';
import { idParams, pageOf, paginationQuery } from '../platform/schemas/common.ts';
import { analysisResultSchema } from './analysis-result-schemas.ts';

/** What a replay may change inline: an agent's configuration, not its lifecycle or switches. */
const { publishMode: _publishMode, isActive: _isActive, isPublic: _isPublic, ...configurable } = updateAgentBody.shape;
const candidateChanges = z.strictObject(configurable);

export const createReplayBody = z
  .strictObject({
    /** The sessions to replay, by id; or `lastClosed`: the agent's last N closed sessions. */
    sessionIds: z.array(z.uuid({ error: 'must be a session id' })).min(1).optional(),
    lastClosed: z.int().min(1).optional(),
    /** The candidate: a version of the agent, or changes applied over its published version. */
    candidate: z.union([
      z.strictObject({ version: z.int().min(1) }),
      z.strictObject({ changes: candidateChanges.refine((changes) => Object.keys(changes).length > 0, { error: 'must change at least one field' }) }),
    ]),
    /** Runs a tool call that has no recording live when the tool is safe to repeat (an API tool with GET). */
    liveTools: z.boolean().default(false),
  })
  .refine((body) => (body.sessionIds === undefined) !== (body.lastClosed === undefined), { error: 'give exactly one of sessionIds and lastClosed', path: ['sessionIds'] });
export type CreateReplayInput = z.infer<typeof createReplayBody>;
export type CandidateChanges = z.infer<typeof candidateChanges>;

export const replayParams = idParams.extend({ replayId: z.uuid({ error: 'must be a replay id' }) });

const replayedToolCall = z.object({ name: z.string(), arguments: z.record(z.string(), z.unknown()), result: z.string(), status: z.enum(['SUCCESS', 'ERROR']) });
export type ReplayedToolCall = z.infer<typeof replayedToolCall>;

const turnSide = z.object({
  reply: z.string(),
  toolCalls: z.array(replayedToolCall),
  /** The agent that answered when it is not the replayed one: the target of a handoff earlier in the replay, and the version it answered with. */
  agentId: z.string().optional(),
  agentVersion: z.int().optional(),
});
export type TurnSide = z.infer<typeof turnSide>;

const replayedTurn = z.object({
  /** 1 for the session's first user message. */
  turn: z.int().min(1),
  user: z.string(),
  /** `SAME` when the reply and the tool calls (names, arguments, results) are equal. */
  diff: z.enum(['SAME', 'CHANGED']),
  original: turnSide,
  replay: turnSide,
});
export type ReplayedTurn = z.infer<typeof replayedTurn>;

/** A judgement of the analysis that differs between the original and the replayed transcript. */
const analysisChange = z.object({
  /** `intent`, `resolution`, `sentiment` (their conversation-level verdicts) or `extractedData.<field>`. */
  field: z.string(),
  original: z.union([z.string(), z.number(), z.boolean(), z.null()]),
  replay: z.union([z.string(), z.number(), z.boolean(), z.null()]),
});
export type AnalysisChange = z.infer<typeof analysisChange>;

/** Both transcripts' analyses side by side, when the candidate has an analysis configuration. */
const replayAnalysis = z.object({
  /** The original session's stored analysis (made with the configuration of its time); null when it has none yet. */
  original: analysisResultSchema.nullable(),
  /** The replayed transcript's, made as a session's is, with the candidate's configuration and model. */
  replay: analysisResultSchema,
  /** The judgements that differ, when both analyses COMPLETED; empty otherwise. */
  changes: z.array(analysisChange),
});
export type ReplayAnalysis = z.infer<typeof replayAnalysis>;

const modelTokens = z.object({ modelId: z.string(), inputTokens: z.int().min(0), outputTokens: z.int().min(0) });

/** What a replay's turns used of the models, as the organization's usage counts it (docs/usage-and-billing.md#metering). */
export const replayUsage = z.object({ turns: z.int().min(0), tokens: z.array(modelTokens) });
export type ReplayUsage = z.infer<typeof replayUsage>;

const sessionReplay = z.object({
  sessionId: z.string(),
  status: z.enum(['COMPLETED', 'FAILED']),
  turnsChanged: z.int().min(0),
  turns: z.array(replayedTurn),
  analysis: replayAnalysis.optional(),
  usage: replayUsage.optional(),
  error: z.string().optional(),
});
export type SessionReplay = z.infer<typeof sessionReplay>;

export const replayStatuses = ['QUEUED', 'RUNNING', 'COMPLETED', 'FAILED'] as const;

const replaySummaryFields = {
  id: z.uuid(),
  agentId: z.uuid(),
  status: z.enum(replayStatuses),
  candidate: z.object({ version: z.int().optional(), changes: z.record(z.string(), z.unknown()).optional() }),
  liveTools: z.boolean(),
  sessionIds: z.array(z.string()),
  progress: z.object({ sessionsDone: z.int(), sessionsTotal: z.int(), turnsTotal: z.int() }),
  /** The changed turns of the sessions done so far. */
  turnsChanged: z.int().min(0),
  error: z.string().optional(),
  createdAt: z.string(),
  updatedAt: z.string(),
  completedAt: z.string().optional(),
};

/** A replay in a list: everything but the sessions' turns. */
export const replaySummarySchema = z.object(replaySummaryFields);
export const replayPage = pageOf(replaySummarySchema);
export const listReplaysQuery = paginationQuery;
export type ListReplaysQuery = z.output<typeof listReplaysQuery>;

export const replaySchema = z.object({
  ...replaySummaryFields,
  /** Each session done so far, in the order of `sessionIds`: all of them once the replay has COMPLETED. */
  results: z.array(sessionReplay).optional(),
});
export type ReplaySummary = z.infer<typeof replaySummarySchema>;
export type Replay = ReplaySummary & { orgId: string };
