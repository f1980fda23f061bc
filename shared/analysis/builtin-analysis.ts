import type { AnalysisInput, AnalysisOutput } from './ports.ts';
import { otherIntent, type ExtractionField } from '../agents/analysis-config-schemas.ts';
import type { AnalysisResult, ExtractedValue } from '../conversations/analysis-result-schemas.ts';
import type { EndedReason } from '../conversations/session-schemas.ts';
import type { TranscriptLine } from '../conversations/transcript.ts';

/**
 * The built-in model's analysis: deterministic rules over the transcript, no network, so that tests and local
 * users see exact results. Every rule is documented in docs/analysis.md#the-built-in-model; change both together.
 */
export function builtinAnalysis(input: AnalysisInput): AnalysisOutput {
  const { config, transcript } = input;
  const user = transcript.lines.filter((line) => line.role === 'USER');
  const assistant = transcript.lines.filter((line) => line.role === 'ASSISTANT');
  const output: AnalysisOutput = { summary: summarize(transcript.lines, transcript.omitted, input.endedReason) };
  if (config.intentRecognition?.enabled) output.intent = recognizeIntent(config.intentRecognition.intents, user);
  if (config.resolution?.enabled) output.resolution = judgeResolution(config.resolution.checklist, assistant);
  if (config.sentiment?.enabled) output.sentiment = judgeSentiment(user, input.language ?? 'en');
  const fields = config.dataExtraction?.fields ?? [];
  if (fields.length) output.extractedData = Object.fromEntries(fields.map((field) => [field.name, extract(field, user)]));
  return output;
}

const stopWords = new Set(
  'a an and are as at be but by can could did do does for from had has have how i if in into is it its me my no not of on or our please so than that the their them then there these they this to too us was we were what when where which who why will with would you your'.split(' '),
);

/** Lower-case words of letters and digits, a trailing plural `s` dropped (`invoices` → `invoice`, not `process`). */
export function words(text: string): string[] {
  return (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).map((word) => (word.length > 3 && word.endsWith('s') && !word.endsWith('ss') ? word.slice(0, -1) : word));
}

/** The words that carry meaning: no stop words, at least two characters. */
const keywords = (text: string): Set<string> => new Set(words(text).filter((word) => word.length >= 2 && !stopWords.has(word)));

const round2 = (value: number): number => Math.round(value * 100) / 100;

/** `text` cut to `max` characters with `…`, on one line. */
const quote = (text: string, max = 120): string => {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
};

const endings: Record<EndedReason, string> = {
  USER_CLOSED: 'The user closed the session.',
  AGENT_ENDED: 'The agent ended the session.',
  EXPIRED: 'The session expired after inactivity.',
  HANGUP_CALLEE: 'The caller hung up.',
  HANGUP_AGENT: 'The agent ended the call.',
  TTL: 'The call reached its time limit.',
  NO_ANSWER: 'The call was not answered.',
  BUSY: 'The line was busy.',
  FAILED: 'The call could not be connected.',
  CANCELED: 'The call was canceled before it was answered.',
  CONNECTION_LOST: "The connection to the agent was lost and the call was ended.",
  CARRIER_SILENT: 'The carrier never reported the end of the call; it was ended at its time limit.',
  TRANSFERRED: 'The agent transferred the call to a number of the organization.',
};

function summarize(lines: readonly TranscriptLine[], omitted: number, endedReason: EndedReason | undefined): string {
  const count = (role: TranscriptLine['role']) => lines.filter((line) => line.role === role).length;
  const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;
  const user = lines.filter((line) => line.role === 'USER');
  const lastReply = lines.findLast((line) => line.role === 'ASSISTANT');
  const tools = count('TOOL');
  const sentences = [
    `The user sent ${plural(user.length, 'message', 'messages')} and the agent sent ${plural(count('ASSISTANT'), 'reply', 'replies')}${tools ? `, calling tools ${plural(tools, 'time', 'times')}` : ''}.`,
  ];
  if (user.length > 0) sentences.push(`The user opened with "${quote(user[0]!.text)}".`);
  if (user.length > 1) sentences.push(`The user's last message was "${quote(user.at(-1)!.text)}".`);
  if (lastReply) sentences.push(`The agent's last reply was "${quote(lastReply.text)}".`);
  if (omitted > 0) sentences.push(`${plural(omitted, 'message', 'messages')} in the middle were left out of the analysis.`);
  if (endedReason) sentences.push(endings[endedReason]);
  return sentences.join(' ');
}

type IntentJudgement = { intent: string; confidence: number; explanation: string };

/** The configured intent sharing the largest share of its name's and description's words with `text`. */
function bestIntent(intents: readonly { name: string; description?: string | undefined }[], text: string): IntentJudgement {
  const said = keywords(text);
  let best: { name: string; matched: string[]; share: number } | undefined;
  for (const intent of intents) {
    const own = [...keywords(`${intent.name} ${intent.description ?? ''}`)];
    const matched = own.filter((word) => said.has(word));
    const share = own.length ? matched.length / own.length : 0;
    if (matched.length > 0 && (!best || share > best.share)) best = { name: intent.name, matched, share };
  }
  if (!best) return { intent: otherIntent, confidence: 1, explanation: 'No word of any configured intent appears.' };
  return { intent: best.name, confidence: round2(best.share), explanation: `Words of "${best.name}" that appear: ${best.matched.join(', ')}.` };
}

function recognizeIntent(intents: readonly { name: string; description?: string | undefined }[], user: readonly TranscriptLine[]): AnalysisResult['intent'] {
  const last = user.at(-1);
  return {
    conversation: bestIntent(intents, user.map((line) => line.text).join('\n')),
    message: last ? { messageId: last.messageId, ...bestIntent(intents, last.text) } : null,
  };
}

function judgeResolution(checklist: readonly string[], assistant: readonly TranscriptLine[]): AnalysisResult['resolution'] {
  if (checklist.length === 0) {
    return { classification: 'NOT_APPLICABLE', confidenceScore: 1, status: 'NO_CHECKLIST', satisfiedChecklistItems: [], evidence: [], explanation: 'The agent has no checklist.' };
  }
  const satisfied: string[] = [];
  const evidence: string[] = [];
  for (const item of checklist) {
    const needed = keywords(item);
    const seen = new Set<string>();
    // The reply in which the last of the item's words appeared is the evidence.
    const proof = assistant.find((line) => {
      for (const word of keywords(line.text)) if (needed.has(word)) seen.add(word);
      return seen.size === needed.size;
    });
    if (proof && needed.size > 0) {
      satisfied.push(item);
      evidence.push(`${item}: "${quote(proof.text)}"`);
    }
  }
  const classification = satisfied.length === checklist.length ? 'RESOLVED' : satisfied.length > 0 ? 'PARTIALLY_RESOLVED' : 'UNRESOLVED';
  return {
    classification,
    confidenceScore: 1,
    status: satisfied.length === checklist.length ? 'CHECKLIST_COMPLETE' : 'CHECKLIST_INCOMPLETE',
    satisfiedChecklistItems: satisfied,
    evidence,
    explanation: `${satisfied.length} of ${checklist.length} checklist items have all their words in the agent's replies.`,
  };
}

const positiveWords = new Set(
  words('thanks thank great good excellent happy perfect love awesome helpful wonderful glad appreciate nice fantastic brilliant pleased amazing solved'),
);
const negativeWords = new Set(
  words('bad terrible awful angry upset broken wrong hate disappointed frustrated frustrating useless poor annoyed horrible worst failed unacceptable problem'),
);

function lexiconScore(text: string): { score: number; positive: number; negative: number } {
  const all = words(text);
  const positive = all.filter((word) => positiveWords.has(word)).length;
  const negative = all.filter((word) => negativeWords.has(word)).length;
  return { score: positive + negative ? round2((positive - negative) / (positive + negative)) : 0, positive, negative };
}

const sentimentOf = (score: number) => (score >= 0.25 ? 'POSITIVE' : score <= -0.25 ? 'NEGATIVE' : 'NEUTRAL');

function judgeSentiment(user: readonly TranscriptLine[], language: string): AnalysisResult['sentiment'] {
  const overall = lexiconScore(user.map((line) => line.text).join('\n'));
  const last = user.at(-1);
  const lastScore = last ? lexiconScore(last.text).score : 0;
  return {
    conversation: {
      sentiment: sentimentOf(overall.score),
      score: overall.score,
      detectedLanguage: language,
      explanation: `${overall.positive} positive and ${overall.negative} negative words in the user's messages.`,
    },
    message: last ? { messageId: last.messageId, sentiment: sentimentOf(lastScore), score: lastScore } : null,
  };
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const valuePatterns: Record<ExtractionField['type'], (field: ExtractionField) => string> = {
  string: () => '([\\p{L}\\p{N}][\\p{L}\\p{N}._@+/-]*)',
  number: () => '(-?\\d+(?:\\.\\d+)?)',
  boolean: () => '(yes|no|true|false)',
  date: () => '(\\d{4}-\\d{2}-\\d{2}(?:T\\d{2}:\\d{2}(?::\\d{2}(?:\\.\\d+)?)?(?:Z|[+-]\\d{2}:\\d{2}))?)',
  enum: (field) => `(${(field.values ?? []).map(escapeRegExp).join('|')})`,
};

/** `order_id` or `orderId` → `order[\s_-]*id`: the field's name as people write it. */
function namePattern(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .split(/[_\s]+/)
    .filter(Boolean)
    .map(escapeRegExp)
    .join('[\\s_-]*');
}

function typedValue(field: ExtractionField, raw: string): ExtractedValue {
  switch (field.type) {
    case 'number':
      return Number(raw);
    case 'boolean':
      return ['yes', 'true'].includes(raw.toLowerCase());
    case 'enum':
      return (field.values ?? []).find((value) => value.toLowerCase() === raw.toLowerCase()) ?? null;
    case 'date': {
      // A calendar-impossible date (2026-02-31) is not a date.
      const day = raw.slice(0, 10);
      return new Date(`${day}T00:00:00Z`).toISOString().startsWith(day) ? raw : null;
    }
    case 'string':
      return raw.replace(/[.]+$/, '');
  }
}

/** A string value found through the field's description must look like an identifier (hold a digit): `ORD-1234`, not `late`. */
const describedString = '((?=[\\p{L}\\p{N}._@+/-]*\\p{N})[\\p{L}\\p{N}][\\p{L}\\p{N}._@+/-]*)';

/** What makes a field an identifier: the only fields (strings or numbers) looked for through their description. */
const identifierWords = new Set(words('id ids number code reference ref identifier'));

/** A field's name as words (`orderId`, `order_id` → `order Id`, `order id`) and its description. */
const fieldText = (field: ExtractionField): string => `${field.name.replace(/([a-z0-9])([A-Z])/g, '$1 $2').replaceAll('_', ' ')} ${field.description ?? ''}`;

/** The words of a field's name and description as people write them (`gives` also `give`), longest first. */
function describingWords(field: ExtractionField): string {
  const own = [...keywords(fieldText(field))].filter((word) => word.length >= 3);
  return own.sort((a, b) => b.length - a.length || a.localeCompare(b)).map((word) => `${escapeRegExp(word)}s?`).join('|');
}

/**
 * The value of a field, in the user's most recent message that has one: the field's name followed by its value
 * (`order id is A-123`, `order_id: A-123`); else a word of its name or description followed by its value (`order
 * ORD-1234` for an `order_id` described as "the order number the customer gives"), for a string or number field
 * whose name or description says id, number, code or reference, a string value holding a digit; else a date or
 * enum value anywhere in the user's messages; otherwise null.
 */
function extract(field: ExtractionField, user: readonly TranscriptLine[]): ExtractedValue {
  const value = valuePatterns[field.type](field);
  const after = (words: string, found: string) =>
    new RegExp(`(?<![\\p{L}\\p{N}])(?:${words})(?![\\p{L}\\p{N}])\\s*(?:(?:is|was|=|:|#)\\s*)*${found}(?![\\p{L}\\p{N}])`, 'iu');
  const named = after(namePattern(field.name), value);
  const identifier = words(fieldText(field)).some((word) => identifierWords.has(word));
  const described = identifier && (field.type === 'string' || field.type === 'number') ? describingWords(field) : '';
  const anywhere = new RegExp(`(?<![\\p{L}\\p{N}])${value}(?![\\p{L}\\p{N}])`, 'iu');
  const patterns = [named, ...(described ? [after(described, field.type === 'string' ? describedString : value)] : []), ...(field.type === 'date' || field.type === 'enum' ? [anywhere] : [])];
  for (const pattern of patterns) {
    for (const line of [...user].reverse()) {
      const match = pattern.exec(line.text);
      if (!match) continue;
      const typed = typedValue(field, match[1]!);
      if (typed !== null && typed !== '') return typed;
    }
  }
  return null;
}
