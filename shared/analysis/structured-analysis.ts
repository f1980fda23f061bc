import type { LanguageModelV4 } from '@ai-sdk/provider';
import { generateText, NoObjectGeneratedError, Output, type ModelMessage } from 'ai';
import { renderTranscript } from '../conversations/transcript.ts';
import type { AnalysisInput, AnalysisOutput, Analyzer } from './ports.ts';
import { analysisOutputSchema } from './analysis-schemas.ts';
import { otherIntent, type AnalysisConfig } from '../agents/analysis-config-schemas.ts';

/** The model's answer failed the schema, and so did its one repair. */
export class InvalidAnalysisOutputError extends Error {
  readonly code = 'INVALID_OUTPUT';
}

/** Provider errors the AI SDK retries (429, 5xx, network) are tried this often again, within the deadline. */
const modelRetries = 3;

/**
 * Analysis by a provider model through the AI SDK's structured output: a zod schema built from the agent's
 * configuration, validated by the SDK. An answer that fails it gets one repair: the model sees its answer and the
 * validation error and answers again; a second failure is `InvalidAnalysisOutputError`.
 */
export function structuredAnalyzer(model: LanguageModelV4): Analyzer {
  return async (input, signal) => {
    const schema = analysisOutputSchema(input.config);
    const messages: ModelMessage[] = [{ role: 'user', content: analysisPrompt(input) }];
    const ask = async () =>
      (await generateText({ model, system: analysisInstructions, messages, output: Output.object({ schema }), temperature: 0, maxRetries: modelRetries, abortSignal: signal })).output;
    let answer: Record<string, unknown>;
    try {
      answer = await ask();
    } catch (error) {
      if (!NoObjectGeneratedError.isInstance(error)) throw error;
      messages.push(
        { role: 'assistant', content: error.text ?? '' },
        { role: 'user', content: `That answer is not valid: ${error.cause instanceof Error ? error.cause.message : error.message}\nAnswer again with only the corrected JSON object.` },
      );
      try {
        answer = await ask();
      } catch (repairError) {
        if (!NoObjectGeneratedError.isInstance(repairError)) throw repairError;
        throw new InvalidAnalysisOutputError(`The model's answer failed the analysis schema twice: ${repairError.message}`, { cause: repairError });
      }
    }
    return withMessageIds(answer as AnalysisOutput, input);
  };
}

const analysisInstructions = [
  'You analyse a finished conversation between a user and an AI agent for the agent\'s operator.',
  'Answer with one JSON object that matches the given schema, and nothing else.',
  'Judge only from the transcript. Confidence values are from 0 to 1; sentiment scores from -1 (negative) to 1 (positive).',
  'An extracted value the conversation does not state is null; never guess.',
].join(' ');

/** The user prompt: what to judge, built from the configuration, then the (bounded) transcript. */
export function analysisPrompt(input: AnalysisInput): string {
  return [...tasks(input.config), '', 'Transcript:', renderTranscript(input.transcript)].join('\n');
}

function tasks(config: AnalysisConfig): string[] {
  const lines = ['- summary: one paragraph on what the user wanted, what the agent did, and how it ended.'];
  if (config.intentRecognition?.enabled) {
    const intents = config.intentRecognition.intents.map((intent) => `"${intent.name}"${intent.description ? ` (${intent.description})` : ''}`);
    lines.push(`- intent: the user's intent over the conversation and in their last message, one of ${intents.join(', ')}, or "${otherIntent}" if none fits.`);
  }
  if (config.resolution?.enabled) {
    const checklist = config.resolution.checklist;
    lines.push(
      checklist.length
        ? `- resolution: was the user's request resolved? Checklist (list the items the agent satisfied, with evidence quoted from the transcript): ${checklist.map((item) => `"${item}"`).join(', ')}.`
        : '- resolution: was the user\'s request resolved? There is no checklist (status NO_CHECKLIST).',
    );
  }
  if (config.sentiment?.enabled) lines.push("- sentiment: the user's sentiment over the conversation and in their last message, and the language they wrote in (BCP-47).");
  const fields = config.dataExtraction?.fields ?? [];
  if (fields.length) lines.push(`- extractedData: the values of ${fields.map((field) => `${field.name} (${field.type})`).join(', ')}.`);
  return ['Produce:', ...lines];
}

/** Message-level judgements concern the user's last message; the model does not see ids, so they are added here. */
function withMessageIds(answer: AnalysisOutput, input: AnalysisInput): AnalysisOutput {
  const last = input.transcript.lines.findLast((line) => line.role === 'USER');
  const output = { ...answer };
  if (output.intent) output.intent = { ...output.intent, message: last && output.intent.message ? { ...output.intent.message, messageId: last.messageId } : null };
  if (output.sentiment) output.sentiment = { ...output.sentiment, message: last && output.sentiment.message ? { ...output.sentiment.message, messageId: last.messageId } : null };
  return output;
}
