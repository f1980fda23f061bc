import * as z from 'zod';

/**
 * The post-session analysis a session holds: stored on it, shown by the API and carried by `session.ended`
 * (docs/analysis.md#the-result). Conversations own it because the session is theirs; the analysis context produces it.
 */

export const resolutionClassifications = ['RESOLVED', 'PARTIALLY_RESOLVED', 'UNRESOLVED', 'NOT_APPLICABLE'] as const;
/** How much of the checklist the conversation covered; `NO_CHECKLIST` when the agent configured none. */
export const resolutionStatuses = ['CHECKLIST_COMPLETE', 'CHECKLIST_INCOMPLETE', 'NO_CHECKLIST'] as const;
export const sentiments = ['POSITIVE', 'NEUTRAL', 'NEGATIVE'] as const;

export type ExtractedValue = string | number | boolean | null;

/** A confidence, from 0 to 1; what a model answers is held to the same range. */
export const confidence = z.number().min(0).max(1);
/** A sentiment's score, from -1 (negative) to 1 (positive). */
export const sentimentScore = z.number().min(-1).max(1);
const messageId = z.string().min(1);

/**
 * The stored result, as `session.ended` carries it (the event catalog validates with this). Which blocks appear
 * depends on the configuration and the status (docs/analysis.md#the-result).
 */
export const analysisResultSchema = z.object({
  status: z.enum(['COMPLETED', 'FAILED', 'SKIPPED']),
  model: z.object({ id: z.string(), provider: z.string(), name: z.string() }),
  completedAt: z.iso.datetime({ offset: true }),
  summary: z.string().optional(),
  intent: z
    .object({
      conversation: z.object({ intent: z.string(), confidence, explanation: z.string() }),
      message: z.object({ messageId, intent: z.string(), confidence, explanation: z.string() }).nullable(),
    })
    .optional(),
  resolution: z
    .object({
      classification: z.enum(resolutionClassifications),
      confidenceScore: confidence,
      status: z.enum(resolutionStatuses),
      satisfiedChecklistItems: z.array(z.string()),
      evidence: z.array(z.string()),
      explanation: z.string(),
    })
    .optional(),
  sentiment: z
    .object({
      conversation: z.object({ sentiment: z.enum(sentiments), score: sentimentScore, detectedLanguage: z.string(), explanation: z.string() }),
      message: z.object({ messageId, sentiment: z.enum(sentiments), score: sentimentScore }).nullable(),
    })
    .optional(),
  extractedData: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])).optional(),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
});

export type AnalysisResult = z.output<typeof analysisResultSchema>;
