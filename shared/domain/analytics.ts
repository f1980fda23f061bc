/**
 * Session analytics, pre-aggregated: the `analytics` stream consumer turns each session start, session end and
 * message into counts added (exactly once) to an item per agent per day and per hour; a dashboard's query reads
 * those few items whatever the traffic (docs/analytics.md). Percentiles come from DDSketch bins, stored as
 * counters (`<metric>#<bin>`), so they merge across items by addition.
 */
import { DDSketch } from '@datadog/sketches-js';
import type { Counts } from '../store/exactly-once-counter.ts';

/** 2 % relative accuracy: a p95 of 1,000 ms is reported between 980 and 1,020 ms. */
const relativeAccuracy = 0.02;
const mapping = new DDSketch({ relativeAccuracy }).mapping;
const zeroBin = 'z';

export const sketchedMetrics = ['durationSeconds', 'messagesPerSession', 'modelFirstTokenMs', 'platformMs'] as const;
export type SketchedMetric = (typeof sketchedMetrics)[number];

/** The counter that one observation of `value` adds to. */
export function sketchBin(metric: SketchedMetric, value: number): string {
  return `${metric}#${value <= mapping.minPossible ? zeroBin : mapping.key(value)}`;
}

/** p50 and p95 of a metric from its summed bins; null without observations. */
export function percentiles(counts: Counts, metric: SketchedMetric): { p50: number; p95: number; count: number } | null {
  const sketch = new DDSketch({ relativeAccuracy });
  const prefix = `${metric}#`;
  for (const [name, count] of Object.entries(counts)) {
    if (!name.startsWith(prefix) || count <= 0) continue;
    const bin = name.slice(prefix.length);
    sketch.accept(bin === zeroBin ? 0 : mapping.value(Number(bin)), count);
  }
  if (sketch.count === 0) return null;
  const round = (value: number) => Math.round(value * 100) / 100;
  return { p50: round(sketch.getValueAtQuantile(0.5)), p95: round(sketch.getValueAtQuantile(0.95)), count: sketch.count };
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
