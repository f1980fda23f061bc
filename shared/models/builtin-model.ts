/**
 * The built-in model (`builtin/builtin-assistant`): an offline, deterministic language model, so that agents can be
 * created, chatted with and tested without any provider. It never calls the network, and the same conversation
 * always gets the same answer. It looks only at the last message of the conversation, at the tools attached to
 * the agent and at the rules of its prompt (d3), and does exactly one of the following, checked in this order:
 *
 * (a) **Tool call.** If the last message is the user's and its text names one of the attached tools (the tool's
 *     name as a whole word, case-insensitive: `get_weather` matches `GET_WEATHER`, not `get_weather_now`) and
 *     contains a JSON object (the first balanced `{…}` that parses as JSON), it calls that tool with that object
 *     as arguments, and nothing else. When several tools are named, the one named first in the text wins.
 *     Example: `Please run get_weather with {"city": "Paris"}` calls `get_weather` with `{"city":"Paris"}`.
 *
 * (b) **After tool results.** If the last message holds tool results, it replies with one line per result, in
 *     order: `The <tool> tool returned: <output>`, where `<output>` is the result verbatim (a text result as is,
 *     anything else as compact JSON). A failed call reads `The <tool> tool failed: <error>`, a call that was not
 *     run `The <tool> tool was not run: <reason>`. Example: `The get_weather tool returned: {"temp":21}`.
 *     Results of `end_conversation` (see (c)) are not quoted: after that result alone the reply is empty, as
 *     the farewell was already said. A text result that carries knowledge excerpts (the knowledge tool's,
 *     `search_knowledge`) is answered from its first excerpt as in (e); one that opens with `Say exactly this to
 *     the caller, and nothing else: ` (a hybrid voice turn's answer) is said as the text after it.
 *
 * (c) **Goodbye.** If the last message is the user's, says goodbye (`bye`, `goodbye` or `that's all` as whole
 *     words, in any case, punctuation ignored: `Bye!`, `OK, goodbye.`, `bye-bye`, `That's all, thanks`), and
 *     a tool named `end_conversation` is attached, it says `Goodbye! Thanks for chatting.` and then calls
 *     `end_conversation` with `{"reason":"user said goodbye"}`. A message that also names a tool and carries a
 *     JSON object is a tool call (a) instead.
 *
 * (d) **Image.** If the last message is the user's and carries images (file parts of an `image/…` type, as a
 *     WhatsApp customer's photo), it acknowledges the first: `I received your image (<media type>, <n> bytes)
 *     with the text "<text>". I am the built-in offline model and cannot look at images; connect a provider model
 *     that accepts images for real answers.`, `<text>` as in (f).
 *
 * (d2) **Tool asked for in plain words.** If the last message is the user's, names no tool and carries no JSON
 *     object (the exact form (a), whose near misses call nothing) and asks for a tool in plain words, it calls that tool and nothing else (`builtin-tool-choice.ts`): each word of
 *     the message (stop words left out, a plural `s` dropped) scores 2 when it is a word of the tool's name
 *     (`get_weather` → get, weather) and 1 when it is a word of its description or of a parameter's name or
 *     description; the best tool scoring at least 2 (the first offered among equals, `end_conversation` never) is
 *     called when every required parameter has a value in the message. A value is, by the parameter's schema: an
 *     `enum` value written in the message; for a number, the first number; for a string, an e-mail address (a
 *     parameter about e-mail), else the first `"quoted"` text, else a token holding a digit (a parameter about an
 *     id, number, code or reference), else capitalised words after `in`, `at`, `for`, `from`, `to`, `near`, `of`
 *     or `about`, else the first capitalised words not opening the message. Example: `What is the weather in
 *     Paris?` with `get_weather` (a required string `city`) calls it with `{"city":"Paris"}`.
 *
 * (d3) **A rule of the prompt.** If the last message is the user's and a system message that is not knowledge
 *     excerpts (the agent's prompt) holds a rule `If the user mentions <topic>, say "<reply>"` (`asks about` for
 *     `mentions`; `caller` or `customer` for `user`; `answer` or `reply` for `say`, with an optional `with` and `:`;
 *     several topics apart by `or`; case ignored), and the message mentions one of its topics (its words, in order,
 *     as whole words, a plural `s` ignored), it answers `<reply>` exactly. The first such rule in the prompt wins
 *     (`builtin-prompt-rules.ts`). Example: with `If the user asks about refunds, say "Refunds take 5 days."` in
 *     the prompt, `How long does a refund take?` is answered `Refunds take 5 days.`. It is the one instruction the
 *     model follows, so that a changed prompt changes its answers predictably.
 *
 * (e) **Knowledge.** If a system message carries retrieved knowledge excerpts (`prompt-conventions.ts`),
 *     it answers from the first one: `According to <source> [1]: <text>`, the excerpt's text cut to its first
 *     300 characters (with `…` when cut). Example: `According to Refund policy › Deadlines [1]: Refunds are …`.
 *
 * (f) **Otherwise** it answers `You said: "<text>". I am the built-in offline model; connect a provider model
 *     for real answers.`, where `<text>` is the last user message, trimmed, cut to its first 200 characters
 *     (with `…` when cut).
 *
 * Text is streamed word by word: each delta is a word with the whitespace before it, and the deltas concatenate
 * to the full text. `tokenDelayMs` (default 0) waits between deltas, to imitate a real model. Usage counts each
 * delta as one output token, and each whitespace-separated word of the conversation as one input token. Tool
 * call ids are random (`call_<32 hex>`), as real providers' are, because tools receive them as Idempotency-Key.
 */
import type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4Content,
  LanguageModelV4FilePart,
  LanguageModelV4FinishReason,
  LanguageModelV4FunctionTool,
  LanguageModelV4GenerateResult,
  LanguageModelV4Message,
  LanguageModelV4Prompt,
  LanguageModelV4StreamPart,
  LanguageModelV4ToolResultPart,
  LanguageModelV4Usage,
} from '@ai-sdk/provider';
import { endConversationTool, firstExcerpt, verbatimReplyPrefix, type KnowledgeExcerpt } from './prompt-conventions.ts';
import { escapeRegExp, toolAskedFor } from './builtin-tool-choice.ts';
import { promptRules, ruleReply } from './builtin-prompt-rules.ts';

export const builtinProvider = 'builtin';
export const builtinModelName = 'builtin-assistant';
export const farewellText = 'Goodbye! Thanks for chatting.';
export const endConversationInput = { reason: 'user said goodbye' } as const;
const echoLimit = 200;

export interface BuiltinModelOptions {
  /** Milliseconds between two streamed deltas; 0 (the default) streams as fast as the consumer reads. */
  tokenDelayMs?: number;
}

/** What the model decided to answer; computed up front, then streamed. */
interface Reply {
  text: string;
  toolCall?: { toolCallId: string; toolName: string; input: string };
}

export function createBuiltinModel(options: BuiltinModelOptions = {}): LanguageModelV4 {
  const tokenDelayMs = Math.max(0, options.tokenDelayMs ?? 0);
  const model: LanguageModelV4 = {
    specificationVersion: 'v4',
    provider: builtinProvider,
    modelId: builtinModelName,
    supportedUrls: {},
    async doStream(call) {
      throwIfAborted(call.abortSignal);
      return { stream: replyStream(call, tokenDelayMs) };
    },
    async doGenerate(call) {
      const { stream } = await model.doStream(call);
      return collect(stream);
    },
  };
  return model;
}

/** Decides the reply from the conversation and the offered tools; pure and deterministic. */
export function decideReply(prompt: LanguageModelV4Prompt, tools: LanguageModelV4CallOptions['tools']): Reply {
  const functionTools = (tools ?? []).filter((tool): tool is LanguageModelV4FunctionTool => tool.type === 'function');
  const last = prompt.at(-1);
  const toolCallId = `call_${crypto.randomUUID().replaceAll('-', '')}`;

  if (last?.role === 'tool') return { text: describeToolResults(trailingToolResults(prompt)) };

  if (last?.role === 'user') {
    const text = userText(last);
    const named = firstNamedTool(text, functionTools);
    if (named) {
      const object = firstJsonObject(text);
      if (object !== undefined) return { text: '', toolCall: { toolCallId, toolName: named.name, input: JSON.stringify(object) } };
    }
    if (isGoodbye(text) && functionTools.some((tool) => tool.name === endConversationTool)) {
      return {
        text: farewellText,
        toolCall: { toolCallId, toolName: endConversationTool, input: JSON.stringify(endConversationInput) },
      };
    }
    const image = typeof last.content === 'string' ? undefined : last.content.find((part) => part.type === 'file' && part.mediaType.startsWith('image'));
    if (image?.type === 'file') return { text: imageReply(image.mediaType, byteLength(image.data), text) };
    // A message that names a tool or carries a JSON object is the exact form (a): a near miss calls nothing.
    const plain = !named && firstJsonObject(text) === undefined;
    const asked = plain ? toolAskedFor(text, functionTools.filter((tool) => tool.name !== endConversationTool)) : undefined;
    if (asked) return { text: '', toolCall: { toolCallId, toolName: asked.tool.name, input: JSON.stringify(asked.input) } };
    const instructions = prompt.flatMap((message) => (message.role === 'system' && !firstExcerpt(message.content) ? promptRules(message.content) : []));
    const ruled = ruleReply(instructions, text);
    if (ruled !== undefined) return { text: ruled };
  }

  const excerpt = prompt.map((message) => (message.role === 'system' ? firstExcerpt(message.content) : undefined)).find(Boolean);
  if (excerpt) return { text: knowledgeReply(excerpt) };
  const lastUser = prompt.findLast((message) => message.role === 'user');
  return { text: echoReply(lastUser ? userText(lastUser) : '') };
}

const excerptLimit = 300;

const knowledgeReply = (excerpt: KnowledgeExcerpt): string => `According to ${excerpt.source} [1]: ${cut(excerpt.text, excerptLimit)}`;

function cut(text: string, limit: number): string {
  const characters = Array.from(text.trim());
  return characters.length > limit ? `${characters.slice(0, limit).join('')}…` : characters.join('');
}

function imageReply(mediaType: string, bytes: number | undefined, text: string): string {
  const size = bytes === undefined ? mediaType : `${mediaType}, ${bytes} bytes`;
  return `I received your image (${size}) with the text "${cut(text, echoLimit)}". I am the built-in offline model and cannot look at images; connect a provider model that accepts images for real answers.`;
}

/** The size of a file part's bytes (base64 text counted as the bytes it encodes); undefined for a URL or reference. */
function byteLength(data: LanguageModelV4FilePart['data']): number | undefined {
  if (data.type !== 'data') return undefined;
  return typeof data.data === 'string' ? Buffer.from(data.data, 'base64').length : data.data.byteLength;
}

function echoReply(text: string): string {
  return `You said: "${cut(text, echoLimit)}". I am the built-in offline model; connect a provider model for real answers.`;
}

function userText(message: LanguageModelV4Message): string {
  if (typeof message.content === 'string') return message.content;
  return message.content
    .filter((part) => part.type === 'text')
    .map((part) => part.text)
    .join('\n');
}

/** The tool results of the messages after the last non-tool message, in order. */
function trailingToolResults(prompt: LanguageModelV4Prompt): LanguageModelV4ToolResultPart[] {
  const results: LanguageModelV4ToolResultPart[] = [];
  for (let index = prompt.length - 1; index >= 0; index--) {
    const message = prompt[index]!;
    if (message.role !== 'tool') break;
    results.unshift(...message.content.filter((part) => part.type === 'tool-result'));
  }
  return results;
}

function describeToolResults(results: LanguageModelV4ToolResultPart[]): string {
  const relevant = results.filter((result) => result.toolName !== endConversationTool);
  return relevant.map(describeToolResult).join('\n');
}

function describeToolResult({ toolName, output }: LanguageModelV4ToolResultPart): string {
  switch (output.type) {
    case 'text': {
      if (output.value.startsWith(verbatimReplyPrefix)) return output.value.slice(verbatimReplyPrefix.length);
      const excerpt = firstExcerpt(output.value);
      return excerpt ? knowledgeReply(excerpt) : `The ${toolName} tool returned: ${output.value}`;
    }
    case 'json':
      return `The ${toolName} tool returned: ${JSON.stringify(output.value)}`;
    case 'error-text':
      return `The ${toolName} tool failed: ${output.value}`;
    case 'error-json':
      return `The ${toolName} tool failed: ${JSON.stringify(output.value)}`;
    case 'execution-denied':
      return `The ${toolName} tool was not run: ${output.reason ?? 'execution denied'}`;
    default:
      return `The ${toolName} tool returned: ${JSON.stringify(output)}`;
  }
}

/** The offered tool whose name appears first in `text` as a whole word, case-insensitive. */
function firstNamedTool(text: string, tools: LanguageModelV4FunctionTool[]): LanguageModelV4FunctionTool | undefined {
  let best: { tool: LanguageModelV4FunctionTool; index: number } | undefined;
  for (const tool of tools) {
    const match = new RegExp(`(?<![A-Za-z0-9_])${escapeRegExp(tool.name)}(?![A-Za-z0-9_])`, 'i').exec(text);
    if (match && (!best || match.index < best.index || (match.index === best.index && tool.name.length > best.tool.name.length))) {
      best = { tool, index: match.index };
    }
  }
  return best?.tool;
}

/** The first balanced `{…}` in `text` that parses as a JSON object, or undefined. */
export function firstJsonObject(text: string): Record<string, unknown> | undefined {
  for (let start = text.indexOf('{'); start !== -1; start = text.indexOf('{', start + 1)) {
    const end = balancedEnd(text, start);
    if (end === -1) continue;
    try {
      const value: unknown = JSON.parse(text.slice(start, end + 1));
      if (value !== null && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
    } catch {
      // Not JSON: try the next `{`.
    }
  }
  return undefined;
}

/** Index of the `}` closing the `{` at `start`, skipping braces inside JSON strings; -1 when unbalanced. */
function balancedEnd(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let index = start; index < text.length; index++) {
    const character = text[index];
    if (inString) {
      if (character === '\\') index++;
      else if (character === '"') inString = false;
    } else if (character === '"') inString = true;
    else if (character === '{') depth++;
    else if (character === '}' && --depth === 0) return index;
  }
  return -1;
}

/** `bye`, `goodbye` or `that's all` as whole words, in any case, punctuation ignored. */
export function isGoodbye(text: string): boolean {
  const words = text
    .toLowerCase()
    .replace(/['’`]/g, '')
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);
  return words.some((word, index) => word === 'bye' || word === 'goodbye' || (word === 'thats' && words[index + 1] === 'all'));
}

/** Word-ish tokens, each a word with the whitespace before it; they concatenate to `text`. */
export function tokenize(text: string): string[] {
  return text.match(/\s*\S+|\s+/g) ?? [];
}

function countWords(text: string): number {
  return text.match(/\S+/g)?.length ?? 0;
}

function promptWords(prompt: LanguageModelV4Prompt): number {
  let words = 0;
  for (const message of prompt) {
    if (typeof message.content === 'string') {
      words += countWords(message.content);
      continue;
    }
    for (const part of message.content) {
      if (part.type === 'text' || part.type === 'reasoning') words += countWords(part.text);
      else if (part.type === 'tool-call') words += countWords(JSON.stringify(part.input ?? null));
      else if (part.type === 'tool-result') words += countWords(describeToolResult(part));
    }
  }
  return words;
}

function usage(inputTokens: number, outputTokens: number): LanguageModelV4Usage {
  return {
    inputTokens: { total: inputTokens, noCache: inputTokens, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: outputTokens, text: outputTokens, reasoning: 0 },
  };
}

/** The stream parts of a reply, each flagged when it is a delta (a delay goes between two deltas). */
function replyParts(prompt: LanguageModelV4Prompt, reply: Reply): { part: LanguageModelV4StreamPart; delta: boolean }[] {
  const parts: { part: LanguageModelV4StreamPart; delta: boolean }[] = [
    { part: { type: 'stream-start', warnings: [] }, delta: false },
    { part: { type: 'response-metadata', modelId: builtinModelName }, delta: false },
  ];
  let deltas = 0;
  const tokens = tokenize(reply.text);
  if (tokens.length > 0) {
    parts.push({ part: { type: 'text-start', id: 'text-0' }, delta: false });
    for (const token of tokens) parts.push({ part: { type: 'text-delta', id: 'text-0', delta: token }, delta: true });
    parts.push({ part: { type: 'text-end', id: 'text-0' }, delta: false });
    deltas += tokens.length;
  }
  if (reply.toolCall) {
    const { toolCallId: id, toolName, input } = reply.toolCall;
    parts.push(
      { part: { type: 'tool-input-start', id, toolName }, delta: false },
      { part: { type: 'tool-input-delta', id, delta: input }, delta: true },
      { part: { type: 'tool-input-end', id }, delta: false },
      { part: { type: 'tool-call', toolCallId: id, toolName, input }, delta: false },
    );
    deltas += 1;
  }
  const finishReason: LanguageModelV4FinishReason = reply.toolCall
    ? { unified: 'tool-calls', raw: 'tool_calls' }
    : { unified: 'stop', raw: 'stop' };
  parts.push({ part: { type: 'finish', finishReason, usage: usage(promptWords(prompt), deltas) }, delta: false });
  return parts;
}

function replyStream(call: LanguageModelV4CallOptions, tokenDelayMs: number): ReadableStream<LanguageModelV4StreamPart> {
  const parts = replyParts(call.prompt, decideReply(call.prompt, call.tools));
  const signal = call.abortSignal;
  let next = 0;
  let deltasSent = 0;
  let pending: { timer: NodeJS.Timeout; reject: (reason: unknown) => void } | undefined;
  const onAbort = () => pending?.reject(signal?.reason);

  return new ReadableStream<LanguageModelV4StreamPart>(
    {
      start() {
        signal?.addEventListener('abort', onAbort, { once: true });
      },
      async pull(controller) {
        try {
          throwIfAborted(signal);
          const item = parts[next++];
          if (!item) {
            signal?.removeEventListener('abort', onAbort);
            controller.close();
            return;
          }
          if (item.delta && deltasSent++ > 0 && tokenDelayMs > 0) await sleep(tokenDelayMs);
          throwIfAborted(signal);
          controller.enqueue(item.part);
        } catch (error) {
          signal?.removeEventListener('abort', onAbort);
          controller.error(error);
        }
      },
      cancel() {
        signal?.removeEventListener('abort', onAbort);
        if (pending) clearTimeout(pending.timer);
        pending = undefined;
      },
    },
    { highWaterMark: 0 },
  );

  function sleep(ms: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        pending = undefined;
        resolve();
      }, ms);
      pending = {
        timer,
        reject: (reason) => {
          clearTimeout(timer);
          pending = undefined;
          reject(reason);
        },
      };
    });
  }
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

async function collect(stream: ReadableStream<LanguageModelV4StreamPart>): Promise<LanguageModelV4GenerateResult> {
  const content: LanguageModelV4Content[] = [];
  let text = '';
  let finishReason: LanguageModelV4FinishReason = { unified: 'other', raw: undefined };
  let finalUsage = usage(0, 0);
  for await (const part of stream) {
    switch (part.type) {
      case 'text-delta':
        text += part.delta;
        break;
      case 'text-end':
        content.push({ type: 'text', text });
        text = '';
        break;
      case 'tool-call':
        content.push(part);
        break;
      case 'finish':
        finishReason = part.finishReason;
        finalUsage = part.usage;
        break;
      case 'error':
        throw part.error;
      default:
        break;
    }
  }
  return { content, finishReason, usage: finalUsage, warnings: [] };
}
