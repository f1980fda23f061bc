/**
 * Amazon Nova Sonic (https://docs.aws.amazon.com/nova/latest/userguide/speech-bidirection.html): Bedrock Runtime's
 * InvokeModelWithBidirectionalStream over HTTP/2 with AWS event-stream framing (the SDK's), each event a JSON
 * chunk. A stream is the documented sequence (decision 496): `sessionStart`, `promptStart` (8 kHz LPCM audio out,
 * the tools), the system prompt as a SYSTEM text content, then one USER audio content that stays open (8 kHz LPCM
 * in, converted from the caller's μ-law), tool results as TOOL contents, and on close the audio's `contentEnd`,
 * `promptEnd`, `sessionEnd`.
 *
 * Bedrock ends a stream at its maximum connection duration, so one call may take several streams: the session keeps
 * the conversation's history and renews the stream between replies before the limit, or after a
 * `ModelTimeoutException`, opening the new one with the history (https://docs.aws.amazon.com/nova/latest/userguide/speech-errors.html,
 * decision 525). The port's user sees one session.
 *
 * Nova Sonic hears barge-in itself and says so with an ASSISTANT text `{ "interrupted" : true }`; it has no event
 * that cancels a reply or truncates what it remembers saying, so `interrupt` only stops passing on the reply's
 * audio (decision 497).
 */
import { randomUUID } from 'node:crypto';
import {
  BedrockRuntimeClient,
  InvokeModelWithBidirectionalStreamCommand,
  type InvokeModelWithBidirectionalStreamInput,
  type InvokeModelWithBidirectionalStreamOutput,
} from '@aws-sdk/client-bedrock-runtime';
import { awsServiceError } from './aws-errors.ts';
import { EventQueue } from './event-queue.ts';
import { bytesToPcm16, muLawDecode, muLawEncode, pcm16ToBytes } from './telephone-audio.ts';
import type { SpeechToSpeech, SpeechToSpeechEvent, SpeechToSpeechOptions, SpeechToSpeechSession } from './ports.ts';

export const novaSonicModel = 'amazon.nova-sonic-v1:0';
export const novaSonicDefaultVoice = 'matthew';
/** Telephone audio's rate, which Nova Sonic takes in and gives out as 16-bit LPCM: no resampling either way. */
const sampleRateHertz = 8_000;
const inferenceConfiguration = { maxTokens: 1024, topP: 0.9, temperature: 0.7 };
const closeGraceMs = 5_000;
/** The documented bounds of a chat history: one `textInput` at most 1 KB, the whole history at most 40 KB. */
export const novaSonicHistoryLimits = { textInputBytes: 1_024, totalBytes: 40 * 1_024 };

/** How long one stream may last, and when the session renews it (decision 525). */
export interface NovaSonicConnectionLimits {
  /** Bedrock's maximum connection duration of one bidirectional stream. */
  maxConnectionMs: number;
  /** From this long before the limit, the stream is renewed at the first moment between replies. */
  renewBeforeMs: number;
  /** This long before the limit, the stream is renewed whatever is under way. */
  forceBeforeMs: number;
}

/** Nova Sonic's 8 minutes; renewal from 90 s before, forced 10 s before. */
export const novaSonicConnectionLimits: NovaSonicConnectionLimits = { maxConnectionMs: 8 * 60_000, renewBeforeMs: 90_000, forceBeforeMs: 10_000 };

/** An input event as Nova Sonic documents it (`{ "event": { "<name>": {…} } }`). */
export type NovaSonicInput = { event: Record<string, Record<string, unknown>> };

export function novaSonicSpeechToSpeech(connection: { region: string; endpoint?: string | undefined; limits?: NovaSonicConnectionLimits | undefined }): SpeechToSpeech {
  const client = new BedrockRuntimeClient({
    region: connection.region,
    ...(connection.endpoint ? { endpoint: connection.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
  });
  return {
    provider: 'bedrock',
    open: (options) => {
      const session = novaSonicSession(options, connection.limits);
      void run(client, options.model, session);
      return session.port;
    },
  };
}

/** One Bedrock request of the session: the input events to send, and what to do with each output event. */
export interface NovaSonicStream {
  input: EventQueue<NovaSonicInput>;
  /** Takes one output event (the JSON of a chunk). */
  receive(output: unknown): void;
  /** The request failed (an AWS SDK error, or an exception event of the stream). */
  fail(error: unknown): void;
  /** The output ended. */
  finish(): void;
  readonly signal: AbortSignal;
}

/** The port's session, and the streams it opens one after another (each to be run as a Bedrock request). */
export interface NovaSonicSession {
  port: SpeechToSpeechSession;
  streams: AsyncIterable<NovaSonicStream>;
  /** The stream the caller's audio goes to now. */
  readonly current: NovaSonicStream;
}

interface OutputContent {
  role: string;
  type: string;
  stage: string | undefined;
}

interface HistoryMessage {
  role: 'USER' | 'ASSISTANT';
  text: string;
}

interface StreamState extends NovaSonicStream {
  /** Tool uses asked on this stream, not yet answered: their results can go to no other. */
  pendingTools: Set<string>;
  /** A reply ended whole on this stream: within the renewal margin, the next such moment renews it. */
  carriedReply: boolean;
  /** Another stream took over: only its usage is still read. */
  retired: boolean;
  openedAt: number;
  timers: NodeJS.Timeout[];
  sendClosing(): void;
  toolResult(callId: string, output: string): void;
  say(text: string): void;
  write(chunk: Uint8Array): void;
}

/** The protocol, apart from the transport: the adapter's tests drive it with the documented examples. */
export function novaSonicSession(options: SpeechToSpeechOptions, limits: NovaSonicConnectionLimits = novaSonicConnectionLimits): NovaSonicSession {
  // A forced renewal at or past the stream's opening would renew each new stream at once, without end.
  if (limits.forceBeforeMs >= limits.maxConnectionMs) throw new RangeError('forceBeforeMs must be shorter than maxConnectionMs');
  const events = new EventQueue<SpeechToSpeechEvent>();
  const streams = new EventQueue<NovaSonicStream>();
  /** The caller's transcripts and the model's final texts, in order: what a new stream is given. */
  const history: HistoryMessage[] = [];

  /** A reply is under way (its response-done not yet reported), and its FINAL text so far. */
  let replying = false;
  let spoken: string[] = [];
  /** `interrupt` was called: the rest of this reply's audio is dropped. */
  let muted = false;
  /** The model owes an answer (the caller spoke, a tool result or a `say` went in) and has not begun it. */
  let answerAwaited = false;
  /** The caller spoke over a reply and has not been heard to the end yet. */
  let callerSpeaking = false;
  let closed = false;

  /** The reply is over; one that asked for tools is over once it has asked (the answer after their results is another). */
  const replyDone = (askedForTools = false) => {
    if (!replying && !askedForTools) return;
    if (spoken.length > 0) {
      const text = spoken.join(' ');
      events.push({ type: 'assistant-transcript', text, final: true });
      history.push({ role: 'ASSISTANT', text });
    }
    events.push({ type: 'response-done' });
    replying = false;
    spoken = [];
  };

  const openStream = (): StreamState => {
    const input = new EventQueue<NovaSonicInput>();
    const aborter = new AbortController();
    const promptName = randomUUID();
    const audioContent = randomUUID();
    const contents = new Map<string, OutputContent>();
    /** The stream's usage totals so far, for a usage event without its delta. */
    const reported = { input: 0, output: 0 };
    const send = (name: string, body: Record<string, unknown>) => input.push({ event: { [name]: body } });
    const textContent = (role: string, interactive: boolean, text: string) => {
      const contentName = randomUUID();
      send('contentStart', { promptName, contentName, type: 'TEXT', interactive, role, textInputConfiguration: { mediaType: 'text/plain' } });
      for (const piece of role === 'SYSTEM' ? [text] : utf8Pieces(text, novaSonicHistoryLimits.textInputBytes)) send('textInput', { promptName, contentName, content: piece });
      send('contentEnd', { promptName, contentName });
    };

    send('sessionStart', { inferenceConfiguration });
    send('promptStart', {
      promptName,
      textOutputConfiguration: { mediaType: 'text/plain' },
      audioOutputConfiguration: {
        mediaType: 'audio/lpcm',
        sampleRateHertz,
        sampleSizeBits: 16,
        channelCount: 1,
        voiceId: options.voiceId ?? novaSonicDefaultVoice,
        encoding: 'base64',
        audioType: 'SPEECH',
      },
      toolUseOutputConfiguration: { mediaType: 'application/json' },
      toolConfiguration: {
        tools: options.tools.map((tool) => ({ toolSpec: { name: tool.name, description: tool.description, inputSchema: { json: JSON.stringify(tool.parameters) } } })),
      },
    });
    textContent('SYSTEM', false, options.instructions);
    // The history goes after the system prompt and before the audio, as documented for a resumed conversation.
    for (const message of historyToSend(history)) textContent(message.role, false, message.text);
    send('contentStart', {
      promptName,
      contentName: audioContent,
      type: 'AUDIO',
      interactive: true,
      role: 'USER',
      audioInputConfiguration: { mediaType: 'audio/lpcm', sampleRateHertz, sampleSizeBits: 16, channelCount: 1, audioType: 'SPEECH', encoding: 'base64' },
    });

    const usage = (body: Record<string, unknown>) => {
      const details = body.details as { delta?: UsageCounts; total?: UsageCounts } | undefined;
      const total = { input: tokensOf(details?.total?.input), output: tokensOf(details?.total?.output) };
      // The delta is this event's share; without one, the difference of the stream's running totals.
      const delta = details?.delta
        ? { input: tokensOf(details.delta.input), output: tokensOf(details.delta.output) }
        : { input: Math.max(0, total.input - reported.input), output: Math.max(0, total.output - reported.output) };
      reported.input = details?.total ? total.input : reported.input + delta.input;
      reported.output = details?.total ? total.output : reported.output + delta.output;
      if (delta.input > 0 || delta.output > 0) events.push({ type: 'usage', inputTokens: delta.input, outputTokens: delta.output });
    };

    const stream: StreamState = {
      input,
      signal: aborter.signal,
      pendingTools: new Set(),
      carriedReply: false,
      retired: false,
      openedAt: Date.now(),
      timers: [],
      receive: (output) => {
        const event = (output as { event?: Record<string, Record<string, unknown>> }).event ?? {};
        const [name, body] = Object.entries(event)[0] ?? [];
        if (!name || !body) return;
        if (name === 'usageEvent') return usage(body);
        // A retired stream's reply is no one's: the current stream heard the caller from the switch on.
        if (stream.retired) return;
        const contentId = String(body.contentId ?? '');
        switch (name) {
          case 'contentStart': {
            const stage = parseJson<{ generationStage?: string }>(body.additionalModelFields)?.generationStage;
            contents.set(contentId, { role: String(body.role), type: String(body.type), stage });
            // After `interrupt`, what Nova Sonic still says of that reply (its own interruption signal) starts none.
            if (body.role === 'ASSISTANT' && !replying && !muted) {
              replying = true;
              answerAwaited = false;
            }
            return;
          }
          case 'textOutput': {
            const text = String(body.content ?? '');
            const content = contents.get(contentId);
            const role = String(body.role ?? content?.role);
            if (role === 'USER') {
              muted = false;
              callerSpeaking = false;
              if (text.trim()) {
                events.push({ type: 'user-transcript', text: text.trim() });
                history.push({ role: 'USER', text: text.trim() });
                answerAwaited = true;
              }
              return;
            }
            if (parseJson<{ interrupted?: boolean }>(text)?.interrupted === true) {
              callerSpeaking = true;
              events.push({ type: 'speech-started' });
              return;
            }
            if (!replying) return;
            if (content?.stage === 'FINAL') spoken.push(text.trim());
            else events.push({ type: 'assistant-transcript', text, final: false });
            return;
          }
          case 'audioOutput':
            if (!muted) events.push({ type: 'audio', audio: muLawEncode(bytesToPcm16(Buffer.from(String(body.content ?? ''), 'base64'))) });
            return;
          case 'toolUse':
            stream.pendingTools.add(String(body.toolUseId));
            events.push({ type: 'tool-call', callId: String(body.toolUseId), name: String(body.toolName), arguments: String(body.content ?? '{}') });
            return;
          case 'contentEnd': {
            const content = contents.get(contentId);
            contents.delete(contentId);
            if (content?.role === 'TOOL' && body.stopReason === 'TOOL_USE') {
              replyDone(true);
              return;
            }
            // A reply ends with END_TURN, or INTERRUPTED when the caller spoke over it; PARTIAL_TURN and TOOL_USE go on.
            if (content?.role !== 'ASSISTANT' || (body.stopReason !== 'END_TURN' && body.stopReason !== 'INTERRUPTED')) return;
            // The end of the reply `interrupt` cut: the next one is heard, even if no words of the caller come first.
            if (muted && !replying) muted = false;
            replyDone();
            // A reply that ended whole leaves the caller listening to its audio: the moment to renew. After one
            // interrupted, the caller is speaking.
            if (body.stopReason === 'END_TURN') {
              stream.carriedReply = true;
              renewIfDue();
            }
            return;
          }
          case 'completionEnd':
            replyDone();
            return;
          default:
            // completionStart: nothing the port reports.
            return;
        }
      },
      fail: (error) => {
        if (stream.retired || closed) return;
        // Bedrock times a stream out at its maximum connection duration (and sometimes sooner): the conversation goes on in a new one.
        if ((error as { name?: string }).name === 'ModelTimeoutException') {
          resume();
          return;
        }
        events.push({ type: 'error', message: awsServiceError('bedrock', error).message });
        events.end();
        streams.end();
        input.end(true);
      },
      finish: () => {
        if (stream.retired || closed) return;
        replyDone();
        events.end();
        streams.end();
      },
      sendClosing: () => {
        for (const timer of stream.timers) clearTimeout(timer);
        if (!input.ended) {
          send('contentEnd', { promptName, contentName: audioContent });
          send('promptEnd', { promptName });
          send('sessionEnd', {});
          input.end();
        }
        // Bedrock ends the stream once it has the closing events; a stream that does not end is cut.
        setTimeout(() => aborter.abort(), closeGraceMs).unref();
      },
      write: (chunk) => {
        if (!input.ended) send('audioInput', { promptName, contentName: audioContent, content: Buffer.from(pcm16ToBytes(muLawDecode(chunk))).toString('base64') });
      },
      toolResult: (callId, output) => {
        stream.pendingTools.delete(callId);
        const contentName = randomUUID();
        send('contentStart', {
          promptName,
          contentName,
          interactive: false,
          type: 'TOOL',
          role: 'TOOL',
          toolResultInputConfiguration: { toolUseId: callId, type: 'TEXT', textInputConfiguration: { mediaType: 'text/plain' } },
        });
        send('toolResult', { promptName, contentName, content: output });
        send('contentEnd', { promptName, contentName });
      },
      say: (text) => textContent('USER', true, `Say exactly this to the caller, and nothing else: ${text}`),
    };
    const untilLimit = stream.openedAt + limits.maxConnectionMs - Date.now();
    stream.timers.push(
      setTimeout(renewIfDue, untilLimit - limits.renewBeforeMs).unref(),
      setTimeout(() => renew(true), untilLimit - limits.forceBeforeMs).unref(),
    );
    streams.push(stream);
    return stream;
  };

  let current = openStream();
  /** Tool uses of a stream Bedrock timed out: their results have nowhere to go. */
  const orphanedTools = new Set<string>();

  /** Between replies: none under way or owed, no tool result awaited, the caller not speaking over one: a new stream loses nothing. */
  const betweenReplies = () => !replying && !answerAwaited && !callerSpeaking && current.pendingTools.size === 0;

  /** Within the renewal margin, the stream is renewed at the first moment between replies once it has carried one. */
  function renewIfDue() {
    const due = Date.now() >= current.openedAt + limits.maxConnectionMs - limits.renewBeforeMs;
    if (due && current.carriedReply && betweenReplies()) renew(false);
  }

  /**
   * The next stream takes over: opened with the history, written to from now on, and the old one closed with the
   * documented closing events. `forced`: the limit is near, so a reply under way is cut (reported done); a tool use
   * still awaiting its result keeps its stream, which its result must reach.
   */
  function renew(forced: boolean) {
    if (closed || (forced && current.pendingTools.size > 0)) return;
    const previous = current;
    if (forced) cutReply();
    current = openStream();
    previous.retired = true;
    previous.sendClosing();
  }

  /**
   * After a `ModelTimeoutException`: the stream is gone, and with it whatever it was saying or owed; its tool uses'
   * results are answered by no one, so the turn waiting for that answer ends at once.
   */
  function resume() {
    const previous = current;
    previous.retired = true;
    for (const timer of previous.timers) clearTimeout(timer);
    previous.input.end(true);
    for (const callId of previous.pendingTools) orphanedTools.add(callId);
    cutReply(previous.pendingTools.size > 0);
    current = openStream();
  }

  /** The reply under way (or owed) ends here: what was said of it is its transcript. */
  function cutReply(answerLost = false) {
    if (replying) replyDone();
    else if (answerAwaited || answerLost) events.push({ type: 'response-done' });
    answerAwaited = false;
    callerSpeaking = false;
    muted = false;
  }

  const close = () => {
    if (closed) return;
    closed = true;
    current.sendClosing();
    events.end(true);
    streams.end();
  };
  options.signal?.addEventListener('abort', close, { once: true });

  return {
    streams,
    get current() {
      return current;
    },
    port: {
      write: (chunk) => {
        if (!closed && chunk.length > 0) current.write(chunk);
      },
      toolResult: (callId, output) => {
        // A tool use of a stream Bedrock timed out cannot be answered: its turn was ended when the stream was lost.
        if (closed || orphanedTools.has(callId)) return;
        muted = false;
        answerAwaited = true;
        current.toolResult(callId, output);
      },
      interrupt: () => {
        // Nova Sonic stops on its own when it hears the caller; what it remembers saying cannot be cut to playedMs.
        muted = true;
        callerSpeaking = true;
        replyDone();
      },
      say: (text) => {
        if (closed) return;
        answerAwaited = true;
        current.say(text);
      },
      close,
      events,
    },
  };
}

interface TokenCounts {
  speechTokens?: number;
  textTokens?: number;
}

/** A `usageEvent`'s `details.delta` or `details.total` (https://docs.aws.amazon.com/nova/latest/userguide/output-events.html). */
interface UsageCounts {
  input?: TokenCounts;
  output?: TokenCounts;
}

function tokensOf(counts: TokenCounts | undefined): number {
  return (counts?.speechTokens ?? 0) + (counts?.textTokens ?? 0);
}

/**
 * The history as a new stream takes it: consecutive messages of one role joined, the first from the user (as
 * documented), the oldest left out past the documented 40 KB.
 */
function historyToSend(history: readonly HistoryMessage[]): HistoryMessage[] {
  const merged: HistoryMessage[] = [];
  for (const message of history) {
    const last = merged.at(-1);
    if (last?.role === message.role) last.text = `${last.text} ${message.text}`;
    else merged.push({ ...message });
  }
  let bytes = merged.reduce((sum, message) => sum + Buffer.byteLength(message.text), 0);
  while (merged.length > 0 && (merged[0]!.role !== 'USER' || bytes > novaSonicHistoryLimits.totalBytes)) bytes -= Buffer.byteLength(merged.shift()!.text);
  return merged;
}

/** `text` in pieces of at most `maxBytes` of UTF-8, never splitting a character. */
function utf8Pieces(text: string, maxBytes: number): string[] {
  const pieces: string[] = [];
  let piece = '';
  for (const character of text) {
    if (Buffer.byteLength(piece + character) > maxBytes) {
      pieces.push(piece);
      piece = '';
    }
    piece += character;
  }
  return [...pieces, piece];
}

async function run(client: BedrockRuntimeClient, model: string, session: NovaSonicSession): Promise<void> {
  for await (const stream of session.streams) void converse(client, model, stream);
}

async function converse(client: BedrockRuntimeClient, model: string, stream: NovaSonicStream): Promise<void> {
  async function* body(): AsyncIterable<InvokeModelWithBidirectionalStreamInput> {
    for await (const event of stream.input) yield { chunk: { bytes: new TextEncoder().encode(JSON.stringify(event)) } };
  }
  try {
    const response = await client.send(new InvokeModelWithBidirectionalStreamCommand({ modelId: model, body: body() }), { abortSignal: stream.signal });
    for await (const part of response.body ?? []) {
      const bytes = (part as InvokeModelWithBidirectionalStreamOutput.ChunkMember).chunk?.bytes;
      if (bytes) {
        stream.receive(JSON.parse(new TextDecoder().decode(bytes)));
        continue;
      }
      const [name, failure] = Object.entries(part).find(([, value]) => value !== undefined) ?? ['Error', {}];
      throw Object.assign(new Error((failure as { message?: string }).message ?? 'stream failed'), { name: upperFirst(name) });
    }
    stream.finish();
  } catch (error) {
    stream.fail(error);
  }
}

/** An exception member of the output union (`modelTimeoutException`) as the SDK names the error it throws. */
function upperFirst(name: string): string {
  return name.charAt(0).toUpperCase() + name.slice(1);
}

function parseJson<Value>(text: unknown): Value | undefined {
  if (typeof text !== 'string') return undefined;
  try {
    return JSON.parse(text) as Value;
  } catch {
    return undefined;
  }
}
