import * as z from 'zod';
import { otherIntent, type AnalysisConfig, type ExtractionField } from '../agents/analysis-config-schemas.ts';
import { confidence, resolutionClassifications, resolutionStatuses, sentimentScore, sentiments, type ExtractedValue } from '../conversations/analysis-result-schemas.ts';

/**
 * What analysis asks a model for, built from the agent's configuration (agents/analysis-config-schemas.ts) and
 * answered in the shapes of the result the session holds (conversations/analysis-result-schemas.ts).
 */

/** An ISO 8601 date (`2026-11-25`) or date-time with an offset. */
const isoDate = z.union([z.iso.date(), z.iso.datetime({ offset: true })]);

/** The value schema of one extraction field: its declared type, or null when the conversation does not say. */
export function extractionValueSchema(field: ExtractionField): z.ZodType<ExtractedValue> {
  const described = (schema: z.ZodType<Exclude<ExtractedValue, null>>) =>
    schema.nullable().describe([field.description, field.required ? 'Required by the agent.' : '', 'null when the conversation does not say.'].filter(Boolean).join(' '));
  switch (field.type) {
    case 'string':
      return described(z.string());
    case 'number':
      return described(z.number());
    case 'boolean':
      return described(z.boolean());
    case 'date':
      return described(isoDate);
    case 'enum':
      return described(z.enum((field.values ?? []) as [string, ...string[]]));
  }
}

/** `extractedData`: exactly the configured fields, each of its type or null. */
export function extractedDataSchema(fields: readonly ExtractionField[]) {
  return z.strictObject(Object.fromEntries(fields.map((field) => [field.name, extractionValueSchema(field)])));
}

/**
 * What a provider model must answer, built from the agent's configuration: only the enabled blocks, intents
 * limited to the configured ones and `other`, checklist items to the configured ones.
 */
export function analysisOutputSchema(config: AnalysisConfig) {
  const intents: [string, ...string[]] = [otherIntent, ...(config.intentRecognition?.intents ?? []).map((intent) => intent.name)];
  const checklist = config.resolution?.checklist ?? [];
  const shape: Record<string, z.ZodType> = { summary: z.string().min(1).describe('One paragraph summarizing the conversation.') };
  if (config.intentRecognition?.enabled) {
    const judgement = z.object({ intent: z.enum(intents), confidence, explanation: z.string() });
    shape.intent = z.object({ conversation: judgement, message: judgement.describe("The intent of the user's last message.") });
  }
  if (config.resolution?.enabled) {
    shape.resolution = z.object({
      classification: z.enum(resolutionClassifications),
      confidenceScore: confidence,
      status: z.enum(resolutionStatuses),
      satisfiedChecklistItems: checklist.length ? z.array(z.enum(checklist as [string, ...string[]])) : z.array(z.string()).max(0),
      evidence: z.array(z.string()),
      explanation: z.string(),
    });
  }
  if (config.sentiment?.enabled) {
    shape.sentiment = z.object({
      conversation: z.object({ sentiment: z.enum(sentiments), score: sentimentScore, detectedLanguage: z.string().min(2), explanation: z.string() }),
      message: z.object({ sentiment: z.enum(sentiments), score: sentimentScore }).describe("The sentiment of the user's last message."),
    });
  }
  const fields = config.dataExtraction?.fields ?? [];
  if (fields.length) shape.extractedData = extractedDataSchema(fields);
  return z.object(shape);
}
