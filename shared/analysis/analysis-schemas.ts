import * as z from 'zod';
import { optionalText, requiredText } from '../platform/schemas/common.ts';

/**
 * Post-session analysis: the agent's configuration (`analysis` on the agent) and the result stored on the session
 * and carried by `session.ended` (docs/analysis.md). The same shapes serve chat sessions and, later, voice calls.
 */

export const extractionFieldTypes = ['string', 'number', 'boolean', 'date', 'enum'] as const;
export const resolutionClassifications = ['RESOLVED', 'PARTIALLY_RESOLVED', 'UNRESOLVED', 'NOT_APPLICABLE'] as const;
/** How much of the checklist the conversation covered; `NO_CHECKLIST` when the agent configured none. */
export const resolutionStatuses = ['CHECKLIST_COMPLETE', 'CHECKLIST_INCOMPLETE', 'NO_CHECKLIST'] as const;
export const sentiments = ['POSITIVE', 'NEUTRAL', 'NEGATIVE'] as const;
/** The intent given when none of the configured intents fits. */
export const otherIntent = 'other';

/** The shape only; rules across entries (unique names, enum values) are checked by `analysisConfigProblems`. */
export const extractionFieldSchema = z.strictObject({
  name: z.string().trim().regex(/^[A-Za-z][A-Za-z0-9_]{0,63}$/, { error: 'must be a letter then up to 63 letters, digits or _' }),
  type: z.enum(extractionFieldTypes),
  description: optionalText(500).optional(),
  required: z.boolean().default(false),
  values: z.array(requiredText(100)).max(50).optional(),
});

export const analysisConfigSchema = z.strictObject({
  intentRecognition: z
    .strictObject({
      enabled: z.boolean(),
      intents: z.array(z.strictObject({ name: requiredText(100), description: optionalText(500).optional() })).max(50).default([]),
    })
    .optional(),
  resolution: z.strictObject({ enabled: z.boolean(), checklist: z.array(requiredText(200)).max(30).default([]) }).optional(),
  sentiment: z.strictObject({ enabled: z.boolean() }).optional(),
  dataExtraction: z.strictObject({ fields: z.array(extractionFieldSchema).max(50) }).optional(),
});

export type AnalysisConfig = z.output<typeof analysisConfigSchema>;
export type ExtractionField = z.output<typeof extractionFieldSchema>;

/** What makes a well-formed configuration unusable, one issue per entry (empty when it is fine). */
export function analysisConfigProblems(config: AnalysisConfig): { field: string; message: string }[] {
  const problems: { field: string; message: string }[] = [];
  const duplicates = (names: string[], normalize: (name: string) => string) => {
    const seen = new Set<string>();
    return names.map((name) => {
      const key = normalize(name);
      const repeated = seen.has(key);
      seen.add(key);
      return repeated;
    });
  };
  const intents = config.intentRecognition?.intents ?? [];
  duplicates(intents.map((intent) => intent.name), (name) => name.toLowerCase()).forEach((repeated, index) => {
    if (repeated) problems.push({ field: `analysis.intentRecognition.intents.${index}.name`, message: 'intent names must be unique (case-insensitive)' });
  });
  intents.forEach((intent, index) => {
    if (intent.name.toLowerCase() === otherIntent) {
      problems.push({ field: `analysis.intentRecognition.intents.${index}.name`, message: `"${otherIntent}" is reserved for conversations no intent fits` });
    }
  });
  if (config.intentRecognition?.enabled && intents.length === 0) {
    problems.push({ field: 'analysis.intentRecognition.intents', message: 'list at least one intent when intent recognition is enabled' });
  }
  const fields = config.dataExtraction?.fields ?? [];
  duplicates(fields.map((field) => field.name), (name) => name).forEach((repeated, index) => {
    if (repeated) problems.push({ field: `analysis.dataExtraction.fields.${index}.name`, message: 'field names must be unique' });
  });
  fields.forEach((field, index) => {
    const at = `analysis.dataExtraction.fields.${index}.values`;
    if (field.type === 'enum' && !field.values?.length) problems.push({ field: at, message: 'an enum field needs at least one value' });
    if (field.type !== 'enum' && field.values !== undefined) problems.push({ field: at, message: `only enum fields take values, not ${field.type}` });
    if (field.values && new Set(field.values).size !== field.values.length) problems.push({ field: at, message: 'values must be unique' });
  });
  return problems;
}

export type ExtractedValue = string | number | boolean | null;

const unit = z.number().min(0).max(1);
const score = z.number().min(-1).max(1);
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
      conversation: z.object({ intent: z.string(), confidence: unit, explanation: z.string() }),
      message: z.object({ messageId, intent: z.string(), confidence: unit, explanation: z.string() }).nullable(),
    })
    .optional(),
  resolution: z
    .object({
      classification: z.enum(resolutionClassifications),
      confidenceScore: unit,
      status: z.enum(resolutionStatuses),
      satisfiedChecklistItems: z.array(z.string()),
      evidence: z.array(z.string()),
      explanation: z.string(),
    })
    .optional(),
  sentiment: z
    .object({
      conversation: z.object({ sentiment: z.enum(sentiments), score, detectedLanguage: z.string(), explanation: z.string() }),
      message: z.object({ messageId, sentiment: z.enum(sentiments), score }).nullable(),
    })
    .optional(),
  extractedData: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])).optional(),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
});

export type AnalysisResult = z.output<typeof analysisResultSchema>;

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
    const judgement = z.object({ intent: z.enum(intents), confidence: unit, explanation: z.string() });
    shape.intent = z.object({ conversation: judgement, message: judgement.describe("The intent of the user's last message.") });
  }
  if (config.resolution?.enabled) {
    shape.resolution = z.object({
      classification: z.enum(resolutionClassifications),
      confidenceScore: unit,
      status: z.enum(resolutionStatuses),
      satisfiedChecklistItems: checklist.length ? z.array(z.enum(checklist as [string, ...string[]])) : z.array(z.string()).max(0),
      evidence: z.array(z.string()),
      explanation: z.string(),
    });
  }
  if (config.sentiment?.enabled) {
    shape.sentiment = z.object({
      conversation: z.object({ sentiment: z.enum(sentiments), score, detectedLanguage: z.string().min(2), explanation: z.string() }),
      message: z.object({ sentiment: z.enum(sentiments), score }).describe("The sentiment of the user's last message."),
    });
  }
  const fields = config.dataExtraction?.fields ?? [];
  if (fields.length) shape.extractedData = extractedDataSchema(fields);
  return z.object(shape);
}
