import type { Message } from './session-schemas.ts';

/**
 * The conversation as an analysis sees it: one line per message, bounded by a token budget so that a long
 * session neither overflows a model's context nor costs without limit (docs/analysis.md#the-transcript).
 */
export interface TranscriptLine {
  messageId: string;
  role: 'USER' | 'ASSISTANT' | 'TOOL';
  text: string;
}

export interface Transcript {
  /** The kept lines, in order: the start of the conversation, then its end. */
  lines: TranscriptLine[];
  /** Messages left out between the start and the end (0 when everything fits). */
  omitted: number;
  /** Where the omitted messages were: the number of lines kept before them. */
  omittedAfter: number;
}

/** Tokens the transcript may take in a prompt, estimated at four characters a token. */
export const transcriptTokenBudget = 12_000;
/** The share of the budget kept for the start of the conversation; the end gets the rest. */
const headShare = 0.25;
/** No single message takes more than this share of the budget (a pasted log would otherwise crowd out the rest). */
const messageShare = 0.125;
/** Each line's role label and separators. */
const lineOverheadTokens = 4;

export const estimateTokens = (text: string): number => Math.ceil(text.length / 4);

/** The transcript of a session's messages within `budgetTokens`, keeping its start and its end. */
export function boundedTranscript(messages: readonly Message[], budgetTokens = transcriptTokenBudget): Transcript {
  const maxChars = Math.floor(budgetTokens * messageShare) * 4;
  const lines = messages.flatMap((message): TranscriptLine[] => {
    if (message.role === 'SYSTEM') return [];
    const text = message.role === 'TOOL' && message.toolCall ? `${message.toolCall.name} returned: ${message.toolCall.result}` : message.content;
    return [{ messageId: message.id, role: message.role, text: text.length > maxChars ? `${text.slice(0, maxChars - 1)}…` : text }];
  });
  const cost = (line: TranscriptLine) => estimateTokens(line.text) + lineOverheadTokens;
  const total = lines.reduce((sum, line) => sum + cost(line), 0);
  if (total <= budgetTokens) return { lines, omitted: 0, omittedAfter: lines.length };

  const head: TranscriptLine[] = [];
  let used = lineOverheadTokens * 3; // the omission marker
  for (const line of lines) {
    if (used + cost(line) > budgetTokens * headShare) break;
    head.push(line);
    used += cost(line);
  }
  const tail: TranscriptLine[] = [];
  for (let index = lines.length - 1; index >= head.length; index -= 1) {
    const line = lines[index]!;
    if (used + cost(line) > budgetTokens) break;
    tail.unshift(line);
    used += cost(line);
  }
  return { lines: [...head, ...tail], omitted: lines.length - head.length - tail.length, omittedAfter: head.length };
}

/** The transcript as prompt text: `USER: …` lines, with a marker where messages were left out. */
export function renderTranscript(transcript: Transcript): string {
  const rendered = transcript.lines.map((line) => `${line.role}: ${line.text}`);
  if (transcript.omitted > 0) rendered.splice(transcript.omittedAfter, 0, `[… ${transcript.omitted} messages left out …]`);
  return rendered.join('\n');
}
