import type { MetricDefinition } from '../platform/ports.ts';

/** The operational metrics of turns and calls (docs/deploy.md#dashboards-and-alarms), recorded by turn.ts and sessions.ts. */
export const conversationMetrics = {
  turns: { name: 'Turns', unit: 'Count', description: 'Turns run (chat, streamed or not, WhatsApp and voice), failed ones included' },
  turnsFailed: { name: 'TurnsFailed', unit: 'Count', description: 'Turns that failed after they began (model error, timeout, a refused credential)' },
  turnOverhead: {
    name: 'TurnOverhead',
    unit: 'Milliseconds',
    description: "The platform's own time in a turn: its whole time less the model's and the tools' (the reply's metadata.timings.platformMs)",
  },
  inputTokens: { name: 'InputTokens', unit: 'Count', description: 'Input tokens of every model call of the turns, as the providers report them' },
  outputTokens: { name: 'OutputTokens', unit: 'Count', description: 'Output tokens of every model call of the turns, as the providers report them' },
  toolCalls: { name: 'ToolCalls', unit: 'Count', description: 'Tool calls run in turns (end_conversation excluded)' },
  toolCallsFailed: { name: 'ToolCallsFailed', unit: 'Count', description: 'Tool calls whose result is an error (refused arguments, the tool failing or timing out)' },
  callMinutes: {
    name: 'CallMinutes',
    unit: 'None',
    description: "Minutes of each call when it ends (from its session's start, the seconds usage counts); its sample count is the calls ended",
  },
} as const satisfies Record<string, MetricDefinition>;
