/**
 * The turns of an `sts` or `hybrid` call (docs/voice.md#speech-to-speech): a speech-to-speech session hears the
 * caller and speaks its replies itself, and each reply is given to the turn engine as the stream of a model, so that
 * the engine runs the tools the session asks for (with their guards, idempotency and timings), records the
 * transcripts of both sides as the session's messages, and writes the turn as for any call. The audio never passes
 * through here: the media worker plays it as it comes.
 */
import type { LanguageModelV4, LanguageModelV4CallOptions, LanguageModelV4StreamPart, LanguageModelV4ToolResultOutput, LanguageModelV4Usage } from '@ai-sdk/provider';
import type * as z from 'zod';
import { handoffTool, transferCallTool } from '../agents/tool-schemas.ts';
import type { voiceTurnSchema } from '../conversations/session-schemas.ts';
import type { Model } from '../models/model-schemas.ts';
import { endConversationTool, verbatimReplyPrefix } from '../models/prompt-conventions.ts';
import type { SpeechToSpeechEvent, SpeechToSpeechSession } from '../speech/ports.ts';

type Utterance = Extract<SpeechToSpeechEvent, { type: 'user-transcript' }>;
type ResponseEvent = Extract<SpeechToSpeechEvent, { type: 'assistant-transcript' | 'tool-call' | 'usage' | 'response-done' }>;
type TurnEvent = Utterance | ResponseEvent;

/** The built-in tools the session calls itself in `hybrid` too: they decide the call's course, not an answer. */
const sessionTools: ReadonlySet<string> = new Set([endConversationTool, transferCallTool, handoffTool]);

const isUtterance = (event: TurnEvent): event is Utterance => event.type === 'user-transcript';
const isResponseEvent = (event: TurnEvent): event is ResponseEvent => event.type !== 'user-transcript';

/** Which model answered a turn, and why: recorded on the reply as `metadata.voice`. */
type VoiceTurnRecord = z.output<typeof voiceTurnSchema>;

/** The agent's text LLM, which takes a `hybrid` turn the speech-to-speech model asks a tool for. */
export interface TextModel {
  model: Model;
  languageModel: LanguageModelV4;
}

/** Tokens as the engine counts them (a stream's `finish`). */
function usageOf(inputTokens: number, outputTokens: number): LanguageModelV4Usage {
  return {
    inputTokens: { total: inputTokens, noCache: inputTokens, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: outputTokens, text: outputTokens, reasoning: 0 },
  };
}

/**
 * The session's turn events in arrival order. A reader takes the first event of a kind and leaves the others in
 * place: the caller's next utterance may be transcribed while a reply is still under way, and a provider may send
 * the transcript of what the caller said after the reply to it has begun (OpenAI's transcription is asynchronous).
 */
class TurnEvents {
  private readonly events: TurnEvent[] = [];
  private wake: (() => void) | undefined;
  private ended = false;

  push(event: TurnEvent): void {
    this.events.push(event);
    this.wakeReader();
  }

  end(): void {
    this.ended = true;
    this.wakeReader();
  }

  /** The first event that `matches`, removed; undefined once the session ended without one, or `signal` aborted. */
  async take<Event extends TurnEvent>(matches: (event: TurnEvent) => event is Event, signal?: AbortSignal): Promise<Event | undefined> {
    for (;;) {
      const index = this.events.findIndex(matches);
      if (index >= 0) return this.events.splice(index, 1)[0] as Event;
      if (this.ended || signal?.aborted) return undefined;
      await new Promise<void>((resolveWake) => {
        const onAbort = () => resolveWake();
        signal?.addEventListener('abort', onAbort, { once: true });
        this.wake = () => {
          signal?.removeEventListener('abort', onAbort);
          resolveWake();
        };
      });
    }
  }

  private wakeReader(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}

/** A tool output as the session takes it: text. */
function outputText(output: LanguageModelV4ToolResultOutput): string {
  switch (output.type) {
    case 'text':
    case 'error-text':
      return output.value;
    case 'execution-denied':
      return output.reason ?? 'Not run.';
    default:
      return JSON.stringify('value' in output ? output.value : output);
  }
}

/** The turn events of one speech-to-speech session, read one turn at a time. */
export class SpeechToSpeechTurns {
  private readonly events = new TurnEvents();
  private readonly session: SpeechToSpeechSession;
  private readonly stsModel: Model;

  constructor(session: SpeechToSpeechSession, stsModel: Model) {
    this.session = session;
    this.stsModel = stsModel;
  }

  push(event: TurnEvent): void {
    this.events.push(event);
  }

  end(): void {
    this.events.end();
  }

  /** What the caller said next, as the session transcribed it; undefined once the session is over. */
  async nextUtterance(): Promise<string | undefined> {
    return (await this.events.take(isUtterance))?.text;
  }

  /** Lets one response go by unrecorded: the welcome message, which a pipeline call does not store either. */
  async skipResponse(): Promise<void> {
    for (let event = await this.events.take(isResponseEvent); event && event.type !== 'response-done'; event = await this.events.take(isResponseEvent));
  }

  /**
   * The model of one turn, for the turn engine. In `sts` every response of the session is a round of the engine:
   * its transcript the text, its function calls the tool calls, the tool outputs handed back to the session before
   * the next round. In `hybrid` (given the agent's text LLM), a call of one of the agent's own tools or of the
   * knowledge tool hands the turn to the text LLM: it runs the tool rounds with the engine, and its answer goes back
   * to the session as that call's output, to be said word for word; `end_conversation` and the routing tools stay
   * the session's. `record()` tells which answered, and why.
   */
  turnModel(textModel?: TextModel): { model: Model; languageModel: LanguageModelV4; record(): VoiceTurnRecord } {
    const { session, stsModel } = this;
    /** The turn's time limit (the engine's signal): a session that never ends its response fails the turn, not the call. */
    let signal: AbortSignal | undefined;
    const take = () => this.events.take(isResponseEvent, signal);
    let delegated: { callId: string; name: string } | undefined;
    /** The text LLM holds the turn: its rounds' prompts end with its own tools' results. */
    let llmTurn = false;
    /** The tokens of the round under way: the session's as it reports them, and the text LLM's. */
    const tokens = { input: 0, output: 0 };

    /**
     * Streams the session's next response as engine parts; calls of tools the text LLM takes are kept back. `after`:
     * what the round said before, which this response's text is set apart from.
     */
    async function streamResponse(emit: (part: LanguageModelV4StreamPart) => void, after = ''): Promise<void> {
      let spoken = '';
      const speak = (text: string) => {
        emit({ type: 'text-delta', id: 'sts', delta: !spoken && after.trim() ? ` ${text.trimStart()}` : text });
        spoken += text;
      };
      for (let event = await take(); event; event = await take()) {
        if (event.type === 'response-done') return;
        if (event.type === 'usage') {
          tokens.input += event.inputTokens;
          tokens.output += event.outputTokens;
        } else if (event.type === 'assistant-transcript') {
          // A provider that sends only the whole transcript (no deltas) is given as one.
          if (!event.final || !spoken) speak(event.text);
        } else if (textModel && !delegated && !llmTurn && !sessionTools.has(event.name)) {
          delegated = { callId: event.callId, name: event.name };
        } else {
          emit({ type: 'tool-call', toolCallId: event.callId, toolName: event.name, input: event.arguments });
        }
      }
    }

    /** One round of the text LLM; its last round's answer is handed to the session and the session's saying of it streamed. */
    async function llmRound(call: LanguageModelV4CallOptions, emit: (part: LanguageModelV4StreamPart) => void, after = ''): Promise<void> {
      const { languageModel } = textModel as TextModel;
      const { stream } = await languageModel.doStream(call);
      let answer = '';
      let calledTools = false;
      for await (const part of stream) {
        if (part.type === 'text-delta') answer += part.delta;
        else if (part.type === 'tool-call') {
          calledTools = true;
          emit(part);
        } else if (part.type === 'finish') {
          tokens.input += part.usage.inputTokens.total ?? 0;
          tokens.output += part.usage.outputTokens.total ?? 0;
        } else if (part.type === 'error') throw part.error instanceof Error ? part.error : new Error(String(part.error));
      }
      if (calledTools) return;
      // The answer is said by the session, in its voice: what the caller hears of it is the reply's text.
      llmTurn = false;
      session.toolResult((delegated as { callId: string }).callId, `${verbatimReplyPrefix}${answer.trim()}`);
      await streamResponse(emit, after);
    }

    const languageModel: LanguageModelV4 = {
      specificationVersion: 'v4',
      provider: stsModel.provider,
      modelId: stsModel.name,
      supportedUrls: {},
      async doGenerate() {
        throw new Error('A speech-to-speech session only streams.');
      },
      async doStream(call) {
        signal = call.abortSignal;
        const last = call.prompt.at(-1);
        // The engine ran the tools the session called: their outputs go back, and the session answers on.
        if (!llmTurn && last?.role === 'tool') {
          for (const part of last.content) if (part.type === 'tool-result') session.toolResult(part.toolCallId, outputText(part.output));
        }
        const stream = new ReadableStream<LanguageModelV4StreamPart>({
          async start(controller) {
            let said = '';
            const emit = (part: LanguageModelV4StreamPart) => {
              if (part.type === 'text-delta') said += part.delta;
              controller.enqueue(part);
            };
            tokens.input = 0;
            tokens.output = 0;
            try {
              if (llmTurn) await llmRound(call, emit);
              else {
                await streamResponse(emit);
                if (delegated && textModel) {
                  // The text LLM takes the turn from the prompt the engine built for it, without the session's call.
                  llmTurn = true;
                  await llmRound(call, emit, said);
                }
              }
              signal?.throwIfAborted();
              controller.enqueue({ type: 'finish', finishReason: { unified: 'stop', raw: undefined }, usage: usageOf(tokens.input, tokens.output) });
              controller.close();
            } catch (error) {
              controller.error(error);
            }
          },
        });
        return { stream };
      },
    };

    return {
      model: stsModel,
      languageModel,
      record: () => ({
        mode: textModel ? 'hybrid' : 'sts',
        answeredBy: delegated ? 'llm' : 'sts',
        reason: delegated
          ? `the speech-to-speech model asked for ${delegated.name}: the text LLM took the turn`
          : 'the speech-to-speech model answered by itself',
        stsModelId: stsModel.id,
        ...(delegated && textModel ? { llmModelId: textModel.model.id } : {}),
      }),
    };
  }
}
