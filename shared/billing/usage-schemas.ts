import * as z from 'zod';
import { timestamp } from '../platform/schemas/common.ts';

export const usageQuery = z.object({
  from: timestamp.optional(),
  to: timestamp.optional(),
  granularity: z.enum(['hour', 'day', 'month']).default('day'),
});
export type UsageQuery = z.output<typeof usageQuery>;

const metrics = z.object({
  chat_messages: z.number(),
  voice_seconds: z.number(),
  knowledge_chunks: z.number(),
  tool_calls: z.number(),
  tool_errors: z.number(),
  /** Turns run again by replays (docs/agent-versions.md#replay); each also counts two `chat_messages`. */
  replay_turns: z.number(),
});
export type UsageMetrics = z.output<typeof metrics>;

const tokens = z.array(z.object({ modelId: z.string(), inputTokens: z.number(), outputTokens: z.number() }));
const quota = z.number().nullable();

export const usageResponse = z.object({
  granularity: z.enum(['hour', 'day', 'month']),
  from: timestamp,
  to: timestamp,
  series: z.array(z.object({ start: timestamp, end: timestamp, metrics, tokens })),
  currentPeriod: z.object({
    start: timestamp,
    end: timestamp,
    plan: z.string(),
    metrics,
    tokens,
    quotas: z.object({ chat_messages: quota, voice_seconds: quota, knowledge_chunks: quota }),
  }),
});
export type UsageResponse = z.output<typeof usageResponse>;
