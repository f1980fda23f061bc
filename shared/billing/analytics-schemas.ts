import * as z from 'zod';
import { timestamp } from '../platform/schemas/common.ts';

export const analyticsQuery = z.object({
  from: timestamp.optional(),
  to: timestamp.optional(),
  agentId: z.uuid({ error: 'must be a UUID' }).optional(),
  granularity: z.enum(['day', 'hour']).default('day'),
});
export type AnalyticsQuery = z.output<typeof analyticsQuery>;

export const agentAnalyticsQuery = analyticsQuery.omit({ agentId: true });
export const agentAnalyticsParams = z.object({ agentId: z.uuid({ error: 'must be a UUID' }) });

const percentiles = z.object({ p50: z.number(), p95: z.number(), count: z.number() }).nullable();
const tally = z.record(z.string(), z.number());

export const analyticsSummary = z.object({
  sessions: z.object({ total: z.number(), ended: z.number(), byType: tally, byPlatform: tally, byState: tally, byEndedReason: tally }),
  durationSeconds: percentiles,
  messages: z.number(),
  messagesPerSession: z.object({ mean: z.number().nullable(), p50: z.number().nullable(), p95: z.number().nullable() }),
  resolution: tally,
  sentiment: tally,
  topIntents: z.array(z.object({ intent: z.string(), count: z.number() })),
  tools: z.object({ calls: z.number(), errors: z.number(), errorRate: z.number().nullable() }),
  timings: z.object({ modelFirstTokenMs: percentiles, platformMs: percentiles }),
  voiceMinutes: z.number(),
});
export type AnalyticsSummary = z.output<typeof analyticsSummary>;

export const seriesPoint = z.object({
  start: timestamp,
  end: timestamp,
  sessions: z.number(),
  ended: z.number(),
  messages: z.number(),
  toolCalls: z.number(),
  toolErrors: z.number(),
  voiceMinutes: z.number(),
});

export const analyticsResponse = z.object({
  from: timestamp,
  to: timestamp,
  granularity: z.enum(['day', 'hour']),
  agentId: z.string().nullable(),
  totals: analyticsSummary,
  series: z.array(seriesPoint),
});
export type AnalyticsResponse = z.output<typeof analyticsResponse>;
