import * as z from 'zod';
import { optionalText, requiredText } from '../platform/schemas/common.ts';

/**
 * The agent's post-session analysis configuration (`analysis` on the agent, docs/analysis.md#configuration). Agents
 * own it because an agent is saved with it; the analysis context reads it to build what it asks a model for.
 */

export const extractionFieldTypes = ['string', 'number', 'boolean', 'date', 'enum'] as const;
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
