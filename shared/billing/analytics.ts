/**
 * Session analytics, pre-aggregated: the `analytics-aggregate` stream consumer turns each session start, session
 * end and message into counts added (exactly once) to an item per agent per day and per hour; a dashboard's query
 * reads those few items whatever the traffic (docs/analytics.md). Percentiles come from DDSketch bins, stored as
 * counters (`<metric>#<bin>`), so they merge across items by addition.
 */
import type { Counts } from './exactly-once-counter.ts';

/**
 * DDSketch's logarithmic mapping (Masson et al., VLDB 2019): a value v > 0 falls in bin ⌈log_γ v⌉ with
 * γ = (1 + α)/(1 − α), and a bin stands for 2γ^k/(γ + 1), within α of every value in it. Bins are counters, so
 * sketches merge by addition. (`@datadog/sketches-js` has the same mapping but requires an undeclared protobufjs
 * at bundle time; decision 196.)
 */
const relativeAccuracy = 0.02;
const gamma = (1 + relativeAccuracy) / (1 - relativeAccuracy);
const logGamma = Math.log(gamma);
/** Values at or below this (1 µs, 0 messages) share one bin, reported as 0. */
const smallest = 1e-3;
const zeroBin = 'z';

export const sketchedMetrics = ['durationSeconds', 'messagesPerSession', 'modelFirstTokenMs', 'platformMs'] as const;
export type SketchedMetric = (typeof sketchedMetrics)[number];

/** The counter that one observation of `value` adds to. */
export function sketchBin(metric: SketchedMetric, value: number): string {
  return `${metric}#${value <= smallest ? zeroBin : Math.ceil(Math.log(value) / logGamma)}`;
}

/** p50 and p95 of a metric from its summed bins (within 2 % of the true values); null without observations. */
export function percentiles(counts: Counts, metric: SketchedMetric): { p50: number; p95: number; count: number } | null {
  const prefix = `${metric}#`;
  const bins = Object.entries(counts)
    .filter(([name, count]) => name.startsWith(prefix) && count > 0)
    .map(([name, count]) => {
      const bin = name.slice(prefix.length);
      return { value: bin === zeroBin ? 0 : (2 * gamma ** Number(bin)) / (gamma + 1), count };
    })
    .sort((a, b) => a.value - b.value);
  const total = bins.reduce((sum, bin) => sum + bin.count, 0);
  if (total === 0) return null;
  const at = (quantile: number) => {
    const rank = quantile * (total - 1);
    let seen = 0;
    for (const bin of bins) {
      seen += bin.count;
      if (seen > rank) return Math.round(bin.value * 100) / 100;
    }
    return Math.round((bins.at(-1)?.value ?? 0) * 100) / 100;
  };
  return { p50: at(0.5), p95: at(0.95), count: total };
}

/** What a session's end needs beyond its `session.ended` record: read from the session item. */
export interface EndedSessionFacts {
  messageCount: number;
  endedReason?: string | undefined;
}

/** One record for the analytics: what it adds, to which agent's items, at which time; counted once (`seq` or `once`). */
export interface AnalyticsRecord {
  orgId: string;
  sessionId: string;
  agentId: string;
  seq?: number | undefined;
  once?: 'created' | 'ended' | undefined;
  at: string;
  counts: Counts;
}

const sessionPartitionPattern = /^ORG#(.+)#SES#([^#]+)$/;

/** Sessions' agents this process has read or been told of (a session keeps its agent), by `<org>/<session>`. */
const knownAgents = new Map<string, string>();
const maxKnownAgents = 10_000;

function rememberAgent(orgId: string, sessionId: string, agentId: string): void {
  const key = `${orgId}/${sessionId}`;
  if (knownAgents.has(key)) return;
  if (knownAgents.size >= maxKnownAgents) knownAgents.delete(knownAgents.keys().next().value as string);
  knownAgents.set(key, agentId);
}

/**
 * What an organization's items of one stream batch add. A message does not carry its session's agent, and an end
 * needs facts of the session item: the sessions whose agent this process does not know yet (from a start, an end
 * or an earlier read) and those that ended are read in one request, so the messages of a session already seen
 * need no read at all.
 */
export async function analyticsRecordsOf(
  items: readonly Record<string, unknown>[],
  sessionFacts: (sessionIds: readonly string[]) => Promise<Map<string, { agentId: string } & EndedSessionFacts>>,
): Promise<AnalyticsRecord[]> {
  const subjects = items.flatMap((item) => {
    const subject = analyticsSubject(item);
    return subject ? [{ item, subject }] : [];
  });
  for (const { item, subject } of subjects) {
    if (subject.kind !== 'message') rememberAgent(subject.orgId, subject.sessionId, (item.payload as { agentId: string }).agentId);
  }
  const agentOf = (subject: { orgId: string; sessionId: string }) => knownAgents.get(`${subject.orgId}/${subject.sessionId}`);
  const unread = subjects.filter(({ subject }) => subject.kind === 'ended' || (subject.kind === 'message' && !agentOf(subject)));
  const facts = unread.length === 0 ? new Map() : await sessionFacts(unread.map(({ subject }) => subject.sessionId));
  for (const { subject } of unread) {
    const read = facts.get(subject.sessionId);
    if (read) rememberAgent(subject.orgId, subject.sessionId, read.agentId);
  }
  return subjects
    .map(({ item, subject }) => analyticsRecordOf(item, agentOf(subject) ?? 'unknown', facts.get(subject.sessionId)))
    .filter((record): record is AnalyticsRecord => record !== undefined);
}

/** The session a stream item belongs to (its partition), for the items the analytics count. */
export function analyticsSubject(item: Record<string, unknown>): { orgId: string; sessionId: string; kind: 'created' | 'ended' | 'message' } | undefined {
  const partition = sessionPartitionPattern.exec(String(item.pk));
  if (!partition) return undefined;
  const [, orgId = '', sessionId = ''] = partition;
  if (item.entity === 'message' && typeof item.seq === 'number') return { orgId, sessionId, kind: 'message' };
  if (item.entity === 'outbox' && item.type === 'session.created') return { orgId, sessionId, kind: 'created' };
  if (item.entity === 'outbox' && item.type === 'session.ended') return { orgId, sessionId, kind: 'ended' };
  return undefined;
}

interface EndedPayload {
  agentId: string;
  type: string;
  state: string;
  createdAt: string;
  endedAt?: string;
  analysis?: {
    intent?: { conversation?: { intent?: string } } | null;
    resolution?: { classification?: string } | null;
    sentiment?: { conversation?: { sentiment?: string } } | null;
  } | null;
}

/**
 * What an item adds. `agentId` is the session's agent (for messages, which do not carry it); `ended` the facts of
 * an ended session from its item.
 */
export function analyticsRecordOf(item: Record<string, unknown>, agentId: string, ended?: EndedSessionFacts): AnalyticsRecord | undefined {
  const subject = analyticsSubject(item);
  if (!subject) return undefined;
  const { orgId, sessionId } = subject;
  if (subject.kind === 'message') {
    return { orgId, sessionId, agentId, seq: item.seq as number, at: String(item.createdAt), counts: messageCounts(item) };
  }
  if (subject.kind === 'created') {
    const payload = item.payload as { agentId: string; type: string; platform: string; createdAt: string };
    return {
      orgId,
      sessionId,
      agentId: payload.agentId,
      once: 'created',
      at: payload.createdAt,
      counts: { sessions: 1, [`type:${payload.type}`]: 1, [`platform:${payload.platform}`]: 1 },
    };
  }
  const payload = item.payload as EndedPayload;
  const endedAt = payload.endedAt ?? String(item.createdAt);
  const seconds = Math.max(0, (Date.parse(endedAt) - Date.parse(payload.createdAt)) / 1000);
  const counts: Counts = { ended: 1, [`state:${payload.state}`]: 1, [sketchBin('durationSeconds', seconds)]: 1 };
  if (ended) {
    counts.messagesInEnded = ended.messageCount;
    counts[sketchBin('messagesPerSession', ended.messageCount)] = 1;
    if (ended.endedReason) counts[`reason:${ended.endedReason}`] = 1;
  }
  if (payload.type === 'VOICE') counts.voiceSeconds = Math.ceil(seconds);
  const resolution = payload.analysis?.resolution?.classification;
  const sentiment = payload.analysis?.sentiment?.conversation?.sentiment;
  const intent = payload.analysis?.intent?.conversation?.intent;
  if (resolution) counts[`resolution:${resolution}`] = 1;
  if (sentiment) counts[`sentiment:${sentiment}`] = 1;
  if (intent) counts[`intent:${intent}`] = 1;
  return { orgId, sessionId, agentId: payload.agentId, once: 'ended', at: endedAt, counts };
}

function messageCounts(item: Record<string, unknown>): Counts {
  const counts: Counts = { messages: 1 };
  if (item.role === 'TOOL') {
    counts.toolCalls = 1;
    if ((item.toolCall as { status?: string } | undefined)?.status === 'ERROR') counts.toolErrors = 1;
  }
  const timings = (item.metadata as { timings?: { modelFirstTokenMs?: number; platformMs?: number } } | undefined)?.timings;
  if (item.role === 'ASSISTANT' && timings) {
    if (typeof timings.modelFirstTokenMs === 'number') counts[sketchBin('modelFirstTokenMs', timings.modelFirstTokenMs)] = 1;
    if (typeof timings.platformMs === 'number') counts[sketchBin('platformMs', timings.platformMs)] = 1;
  }
  return counts;
}
