/**
 * Amazon Nova Sonic (https://docs.aws.amazon.com/nova/latest/userguide/speech-bidirection.html): Bedrock Runtime's
 * InvokeModelWithBidirectionalStream over HTTP/2 with AWS event-stream framing (the SDK's), each event a JSON
 * chunk. The session is the documented sequence (decision 496): `sessionStart`, `promptStart` (8 kHz LPCM audio out,
 * the tools), the system prompt as a SYSTEM text content, then one USER audio content that stays open for the whole
 * call (8 kHz LPCM in, converted from the caller's μ-law), tool results as TOOL contents, and on close the audio's
 * `contentEnd`, `promptEnd`, `sessionEnd`.
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

/** An input event as Nova Sonic documents it (`{ "event": { "<name>": {…} } }`). */
export type NovaSonicInput = { event: Record<string, Record<string, unknown>> };

export function novaSonicSpeechToSpeech(connection: { region: string; endpoint?: string | undefined }): SpeechToSpeech {
  const client = new BedrockRuntimeClient({
    region: connection.region,
    ...(connection.endpoint ? { endpoint: connection.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
  });
  return {
    provider: 'bedrock',
    open: (options) => {
      const session = novaSonicSession(options);
      void run(client, options.model, session);
      return session.port;
    },
  };
}

/** The session's two sides: the input events to send, and what to do with each output event. */
export interface NovaSonicSession {
  port: SpeechToSpeechSession;
  input: EventQueue<NovaSonicInput>;
  /** Takes one output event (the JSON of a chunk); false once the session ended. */
  receive(output: unknown): void;
  fail(message: string): void;
  /** The output ended. */
  finish(): void;
  readonly signal: AbortSignal;
}

interface OutputContent {
  role: string;
  type: string;
  stage: string | undefined;
}

/** The protocol, apart from the transport: the adapter's tests drive it with the documented examples. */
export function novaSonicSession(options: SpeechToSpeechOptions): NovaSonicSession {
  const events = new EventQueue<SpeechToSpeechEvent>();
  const input = new EventQueue<NovaSonicInput>();
  const aborter = new AbortController();
  const promptName = randomUUID();
  const audioContent = randomUUID();
  const send = (name: string, body: Record<string, unknown>) => input.push({ event: { [name]: body } });
  const textContent = (role: string, text: string) => {
    const contentName = randomUUID();
    send('contentStart', { promptName, contentName, type: 'TEXT', interactive: role !== 'SYSTEM', role, textInputConfiguration: { mediaType: 'text/plain' } });
    send('textInput', { promptName, contentName, content: text });
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
  textContent('SYSTEM', options.instructions);
  send('contentStart', {
    promptName,
    contentName: audioContent,
    type: 'AUDIO',
    interactive: true,
    role: 'USER',
    audioInputConfiguration: { mediaType: 'audio/lpcm', sampleRateHertz, sampleSizeBits: 16, channelCount: 1, audioType: 'SPEECH', encoding: 'base64' },
  });

  const contents = new Map<string, OutputContent>();
  /** A reply is under way (its response-done not yet reported), and its FINAL text so far. */
  let replying = false;
  let spoken: string[] = [];
  /** `interrupt` was called: the rest of this reply's audio is dropped. */
  let muted = false;
  /** The reply is over; one that asked for tools is over once it has asked (the answer after their results is another). */
  const replyDone = (askedForTools = false) => {
    if (!replying && !askedForTools) return;
    if (spoken.length > 0) events.push({ type: 'assistant-transcript', text: spoken.join(' '), final: true });
    events.push({ type: 'response-done' });
    replying = false;
    spoken = [];
  };

  const receive = (output: unknown) => {
    const event = (output as { event?: Record<string, Record<string, unknown>> }).event ?? {};
    const [name, body] = Object.entries(event)[0] ?? [];
    if (!name || !body) return;
    const contentId = String(body.contentId ?? '');
    switch (name) {
      case 'contentStart': {
        const stage = parseJson<{ generationStage?: string }>(body.additionalModelFields)?.generationStage;
        contents.set(contentId, { role: String(body.role), type: String(body.type), stage });
        // After `interrupt`, what Nova Sonic still says of that reply (its own interruption signal) starts none.
        if (body.role === 'ASSISTANT' && !replying && !muted) replying = true;
        return;
      }
      case 'textOutput': {
        const text = String(body.content ?? '');
        const content = contents.get(contentId);
        const role = String(body.role ?? content?.role);
        if (role === 'USER') {
          muted = false;
          if (text.trim()) events.push({ type: 'user-transcript', text: text.trim() });
          return;
        }
        if (parseJson<{ interrupted?: boolean }>(text)?.interrupted === true) {
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
        return;
      }
      case 'completionEnd':
        replyDone();
        return;
      default:
        // completionStart, usageEvent: nothing the port reports.
        return;
    }
  };

  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    if (!input.ended) {
      send('contentEnd', { promptName, contentName: audioContent });
      send('promptEnd', { promptName });
      send('sessionEnd', {});
      input.end();
    }
    events.end(true);
    // Bedrock ends the stream once it has the closing events; a stream that does not end is cut.
    setTimeout(() => aborter.abort(), closeGraceMs).unref();
  };
  options.signal?.addEventListener('abort', close, { once: true });

  return {
    input,
    receive,
    signal: aborter.signal,
    fail: (message) => {
      if (closed) return;
      events.push({ type: 'error', message });
      events.end();
      input.end(true);
    },
    finish: () => {
      replyDone();
      events.end();
    },
    port: {
      write: (chunk) => {
        if (input.ended || chunk.length === 0) return;
        send('audioInput', { promptName, contentName: audioContent, content: Buffer.from(pcm16ToBytes(muLawDecode(chunk))).toString('base64') });
      },
      toolResult: (callId, output) => {
        if (input.ended) return;
        muted = false;
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
      interrupt: () => {
        // Nova Sonic stops on its own when it hears the caller; what it remembers saying cannot be cut to playedMs.
        muted = true;
        replyDone();
      },
      say: (text) => {
        if (!input.ended) textContent('USER', `Say exactly this to the caller, and nothing else: ${text}`);
      },
      close,
      events,
    },
  };
}

async function run(client: BedrockRuntimeClient, model: string, session: NovaSonicSession): Promise<void> {
  async function* body(): AsyncIterable<InvokeModelWithBidirectionalStreamInput> {
    for await (const event of session.input) yield { chunk: { bytes: new TextEncoder().encode(JSON.stringify(event)) } };
  }
  try {
    const response = await client.send(new InvokeModelWithBidirectionalStreamCommand({ modelId: model, body: body() }), { abortSignal: session.signal });
    for await (const part of response.body ?? []) {
      const bytes = (part as InvokeModelWithBidirectionalStreamOutput.ChunkMember).chunk?.bytes;
      if (bytes) {
        session.receive(JSON.parse(new TextDecoder().decode(bytes)));
        continue;
      }
      const [name, failure] = Object.entries(part).find(([, value]) => value !== undefined) ?? ['Error', {}];
      throw Object.assign(new Error((failure as { message?: string }).message ?? 'stream failed'), { name });
    }
    session.finish();
  } catch (error) {
    session.fail(awsServiceError('bedrock', error).message);
  }
}

function parseJson<Value>(text: unknown): Value | undefined {
  if (typeof text !== 'string') return undefined;
  try {
    return JSON.parse(text) as Value;
  } catch {
    return undefined;
  }
}
