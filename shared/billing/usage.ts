/**
 * Usage metering: what each record of the table stream counts, per organization. Counting happens in the
 * `usage-meter` stream consumer, never in a request's path; a per-session watermark makes it exactly once
 * (docs/usage-and-billing.md#metering).
 */

/** Counter attributes: the spec's metrics, tool calls, replayed turns, and `tokens_in:<modelId>` / `tokens_out:<modelId>`. */
export type UsageCounts = Record<string, number>;

/** What a finished replay's `replay.completed` carries of its use: its turns, and the tokens of its replies by model. */
interface ReplayUsage {
  turns: number;
  tokens: readonly { modelId: string; inputTokens: number; outputTokens: number }[];
}

/** One countable record: a message (identified by its sequence number in its session), a voice session's end or a finished replay. */
export interface MeteredRecord {
  orgId: string;
  /** The session whose marker counts it; for a replay, `replay-<replayId>` (no session has that id). */
  sessionId: string;
  /** The message's sequence number; absent for a fact counted once per session (`voice`, `replay`). */
  seq?: number;
  /** The fact a record without `seq` is, counted once per session. */
  once?: 'voice' | 'replay';
  /** When it happened: the hour, day and month it is counted in. */
  at: string;
  counts: UsageCounts;
}

export const tokensInPrefix = 'tokens_in:';
export const tokensOutPrefix = 'tokens_out:';

const sessionPartitionPattern = /^ORG#(.+)#SES#([^#]+)$/;
const agentPartitionPattern = /^ORG#(.+)#AGENT#([^#]+)$/;

/** A replayed turn counts in `chat_messages` as a live turn's messages do: the user's and the reply. */
export const chatMessagesPerReplayedTurn = 2;

/**
 * What a newly written item counts, if anything. Messages: `chat_messages` for USER and ASSISTANT ones, model
 * tokens by model id from an assistant message's `metadata.usage`, `tool_calls` (and `tool_errors`) for TOOL ones.
 * The seam for voice: the `session.ended` outbox record of a VOICE session counts its seconds (end − start,
 * rounded up), whoever writes it. A finished replay's `replay.completed` outbox record counts its turns as messages
 * and replays, and the tokens its replies reported (no message of a replay is written).
 */
export function meteredRecordOf(item: Record<string, unknown>): MeteredRecord | undefined {
  if (item.entity === 'outbox' && item.type === 'replay.completed') return replayRecordOf(item);
  const partition = sessionPartitionPattern.exec(String(item.pk));
  if (!partition) return undefined;
  const [, orgId = '', sessionId = ''] = partition;
  if (item.entity === 'message' && typeof item.seq === 'number') {
    // Every message is a record, even one that counts nothing: the meter's sequence has no holes.
    return { orgId, sessionId, seq: item.seq, at: String(item.createdAt), counts: messageCounts(item) };
  }
  if (item.entity === 'outbox' && item.type === 'session.ended') {
    const payload = item.payload as { type?: string; createdAt?: string; endedAt?: string } | undefined;
    if (payload?.type !== 'VOICE' || !payload.createdAt || !payload.endedAt) return undefined;
    const seconds = Math.max(0, Math.ceil((Date.parse(payload.endedAt) - Date.parse(payload.createdAt)) / 1000));
    return { orgId, sessionId, once: 'voice', at: payload.endedAt, counts: { voice_seconds: seconds } };
  }
  return undefined;
}

function replayRecordOf(item: Record<string, unknown>): MeteredRecord | undefined {
  const orgId = agentPartitionPattern.exec(String(item.pk))?.[1];
  const payload = item.payload as { createdAt?: string; data?: { replayId?: string; usage?: ReplayUsage } } | undefined;
  const usage = payload?.data?.usage;
  if (!orgId || !payload?.createdAt || !payload.data?.replayId || !usage) return undefined;
  const counts: UsageCounts = { replay_turns: usage.turns, chat_messages: chatMessagesPerReplayedTurn * usage.turns };
  for (const model of usage.tokens) {
    counts[`${tokensInPrefix}${model.modelId}`] = model.inputTokens;
    counts[`${tokensOutPrefix}${model.modelId}`] = model.outputTokens;
  }
  return { orgId, sessionId: `replay-${payload.data.replayId}`, once: 'replay', at: payload.createdAt, counts };
}

/**
 * Metrics that count what an organization holds now rather than what it did in a period: the stock item keeps them
 * (changed in the same transaction as what they count), their quota caps the total, and nothing renews them.
 */
export const stockMetrics: readonly string[] = ['knowledge_chunks'];

const usagePartitionPattern = /^ORG#(.+)#USAGE$/;

/** The organization whose stock a newly written item changed (a `usageStockChange` record): its usage is to be rolled up. */
export function stockChangeOrgOf(item: Record<string, unknown>): string | undefined {
  if (item.entity !== 'usageStockChange') return undefined;
  return usagePartitionPattern.exec(String(item.pk))?.[1];
}

function messageCounts(item: Record<string, unknown>): UsageCounts {
  if (item.role === 'USER') return { chat_messages: 1 };
  if (item.role === 'TOOL') {
    const failed = (item.toolCall as { status?: string } | undefined)?.status === 'ERROR';
    return failed ? { tool_calls: 1, tool_errors: 1 } : { tool_calls: 1 };
  }
  if (item.role !== 'ASSISTANT') return {};
  const counts: UsageCounts = { chat_messages: 1 };
  const metadata = item.metadata as { model?: { id?: string }; usage?: { inputTokens?: number; outputTokens?: number } } | undefined;
  const modelId = metadata?.model?.id;
  if (modelId && metadata.usage) {
    counts[`${tokensInPrefix}${modelId}`] = metadata.usage.inputTokens ?? 0;
    counts[`${tokensOutPrefix}${modelId}`] = metadata.usage.outputTokens ?? 0;
  }
  return counts;
}

export type Granularity = 'hour' | 'day' | 'month';

/** The bucket of a time at a granularity: `2026-11-25T11`, `2026-11-25`, `2026-11` (UTC). */
export function bucketOf(at: string, granularity: Granularity): string {
  const iso = new Date(at).toISOString();
  return granularity === 'hour' ? iso.slice(0, 13) : granularity === 'day' ? iso.slice(0, 10) : iso.slice(0, 7);
}

/** Start (inclusive) and end (exclusive) of the bucket that holds `at`. */
export function bucketBounds(at: Date, granularity: Granularity): { start: Date; end: Date } {
  const start = new Date(at);
  if (granularity === 'month') start.setUTCDate(1);
  if (granularity !== 'hour') start.setUTCHours(0);
  start.setUTCMinutes(0, 0, 0);
  const end = new Date(start);
  if (granularity === 'hour') end.setUTCHours(end.getUTCHours() + 1);
  else if (granularity === 'day') end.setUTCDate(end.getUTCDate() + 1);
  else end.setUTCMonth(end.getUTCMonth() + 1);
  return { start, end };
}

/** Adds `counts` into `into`, metric by metric. */
export function addCounts(into: UsageCounts, counts: UsageCounts): UsageCounts {
  for (const [metric, value] of Object.entries(counts)) into[metric] = (into[metric] ?? 0) + value;
  return into;
}

const shownMetrics = ['chat_messages', 'voice_seconds', 'knowledge_chunks', 'tool_calls', 'tool_errors', 'replay_turns'] as const;

/** The counters as the API shows them: every metric (0 when never counted), and tokens by model id. */
export function shownUsage(counts: UsageCounts): {
  metrics: Record<(typeof shownMetrics)[number], number>;
  tokens: { modelId: string; inputTokens: number; outputTokens: number }[];
} {
  const metrics = Object.fromEntries(shownMetrics.map((metric) => [metric, counts[metric] ?? 0])) as Record<(typeof shownMetrics)[number], number>;
  const modelIds = Object.keys(counts)
    .filter((metric) => metric.startsWith(tokensInPrefix))
    .map((metric) => metric.slice(tokensInPrefix.length))
    .sort();
  const tokens = modelIds.map((modelId) => ({
    modelId,
    inputTokens: counts[`${tokensInPrefix}${modelId}`] ?? 0,
    outputTokens: counts[`${tokensOutPrefix}${modelId}`] ?? 0,
  }));
  return { metrics, tokens };
}
