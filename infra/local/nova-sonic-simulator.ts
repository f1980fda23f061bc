import { randomUUID } from 'node:crypto';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import { setTimeout as delay } from 'node:timers/promises';
import type { LanguageModelV4FunctionTool, LanguageModelV4Prompt } from '@ai-sdk/provider';
import { EventStreamCodec, type Message } from '@smithy/eventstream-codec';
import { bytesToPcm16, muLawDecode, muLawEncode, pcm16ToBytes, resample } from '../../shared/speech/telephone-audio.ts';
import { builtinReply, sendJson, startSpeechSimulatorServer, utteranceCutter, type SimulatorEngines, type SpeechSimulator } from './speech-simulator-server.ts';

/**
 * Amazon Nova Sonic, Bedrock Runtime's `POST /model/{modelId}/invoke-with-bidirectional-stream` over HTTP/2
 * (cleartext locally), as the SDK speaks it: a SigV4 `Authorization` for `bedrock` (its signature is not checked), a
 * body of AWS event-stream messages (each signed message wrapping a `chunk` event whose JSON `bytes` are one input
 * event, base64), and an answer of `chunk` events, or a `validationException` that ends the stream.
 *
 * The input events are checked in the documented order and shape
 * (https://docs.aws.amazon.com/nova/latest/userguide/input-events.html): `sessionStart` first, with its inference
 * configuration; one `promptStart` (LPCM audio out at 8, 16 or 24 kHz, a voice); contents opened, filled and closed
 * under that prompt's name, the first a SYSTEM text; audio in as 16-bit LPCM at 8 or 16 kHz, base64; a tool result
 * only for a tool use it asked for; `promptEnd`, then `sessionEnd`. Anything else is a `validationException`. A
 * conversation history (USER and ASSISTANT texts that are not interactive) only after the system prompt and before
 * the audio, from the user first, each `textInput` at most 1 KB and all at most 40 KB
 * (https://docs.aws.amazon.com/nova/latest/nova2-userguide/sonic-chat-history.html); the model answers with it in
 * its prompt. A stream lasts at most `maxConnectionMs` (Nova Sonic's 8 minutes), then ends with the
 * `modelTimeoutException` Bedrock sends then (decision 526).
 *
 * What it answers (https://docs.aws.amazon.com/nova/latest/userguide/output-events.html): utterances cut by the
 * energy detector after 500 ms of silence, heard by the built-in STT (a USER FINAL text), answered by the built-in
 * model (docs/models.md#the-built-in-model) with the prompt's tools: a SPECULATIVE text, its audio spoken by the
 * built-in TTS, and the FINAL text with `END_TURN`; or, for a tool, a `toolUse` (then the answer after its result),
 * after what it says first (`PARTIAL_TURN`: a goodbye before `end_conversation`). Speech
 * heard while a reply's audio is still being sent (ten times faster than it is spoken) interrupts it (`{ "interrupted" : true }`, `INTERRUPTED`).
 * Each reply's tokens are reported in a `usageEvent` before its last content ends (decision 527).
 */
export const novaSonicSimulatorModels = ['amazon.nova-sonic-v1:0'];
const outputRates = [8_000, 16_000, 24_000];
const inputRates = [8_000, 16_000];
const voices = ['matthew', 'tiffany', 'amy'];
/** Nova Sonic's maximum connection duration. */
export const novaSonicMaxConnectionMs = 8 * 60_000;
/** What Bedrock ends a stream with at that limit (https://docs.aws.amazon.com/nova/latest/userguide/speech-errors.html). */
export const novaSonicTimeoutMessage = 'Model has timed out in processing the request. Try your request again.';
const historyTextInputBytes = 1_024;
const historyBytes = 40 * 1_024;
/** The simulator's own token counts (Nova Sonic's tokenizers are not documented): a speech token per 100 ms of audio, a text token per 4 characters. */
const speechTokensPerSecond = 10;
const charactersPerTextToken = 4;
const pauseMs = 500;
/** 100 ms of telephone audio: the reply's audio is sent in events of this, one every 10 ms (ten times faster than spoken, as Nova Sonic generates ahead). */
const replyChunkBytes = 800;
const replyChunkEveryMs = 10;
const text = { toUtf8: (bytes: Uint8Array) => Buffer.from(bytes).toString('utf8'), fromUtf8: (value: string) => new Uint8Array(Buffer.from(value, 'utf8')) };
const stringHeader = (value: string) => ({ type: 'string' as const, value });

type Body = Record<string, unknown>;

export interface NovaSonicSimulator extends SpeechSimulator {
  /** How each conversation ended: `sessionEnd`, the error it was ended with, or `reset` (the client went away). */
  endings: string[];
  /** What the model was given for each reply, in order: the system prompt, the history, the conversation since. */
  prompts: LanguageModelV4Prompt[];
}

export async function startNovaSonicSimulator(options: {
  engines: SimulatorEngines;
  port?: number | undefined;
  /** How long a stream may last (a test's shorter limit); Nova Sonic's 8 minutes by default. */
  maxConnectionMs?: number | undefined;
}): Promise<NovaSonicSimulator> {
  const endings: string[] = [];
  const prompts: LanguageModelV4Prompt[] = [];
  const server = await startSpeechSimulatorServer(
    {
      apiKey: 'local AWS credentials',
      port: options.port,
      http2: true,
      streaming: (request, response, record) => {
        const model = /^\/model\/([^/]+)\/invoke-with-bidirectional-stream$/.exec(request.url ?? '')?.[1];
        if (!model) return false;
        converse(decodeURIComponent(model), request, response, record, {
          engines: options.engines,
          maxConnectionMs: options.maxConnectionMs ?? novaSonicMaxConnectionMs,
          ended: (ending) => endings.push(ending),
          prompted: (prompt) => prompts.push(prompt),
        });
        return true;
      },
    },
    async ({ response, record }) => {
      record(404, undefined);
      sendJson(response, 404, { message: 'Unknown operation' }, { 'x-amzn-errortype': 'UnknownOperationException' });
    },
  );
  return Object.assign(server, { endings, prompts });
}

function converse(
  model: string,
  request: Http2ServerRequest,
  response: Http2ServerResponse,
  record: (status: number) => void,
  { engines, maxConnectionMs, ended, prompted }: { engines: SimulatorEngines; maxConnectionMs: number; ended: (ending: string) => void; prompted: (prompt: LanguageModelV4Prompt) => void },
): void {
  const refuse = (status: number, type: string, message: string) => {
    record(status);
    request.resume();
    sendJson(response, status, { message }, { 'x-amzn-errortype': type });
  };
  if (request.method !== 'POST') return refuse(404, 'UnknownOperationException', 'Unknown operation');
  if (!/^AWS4-HMAC-SHA256 Credential=[^/]+\/\d{8}\/[a-z0-9-]+\/bedrock\/aws4_request, SignedHeaders=[^,]+, Signature=[0-9a-f]{64}$/.test(String(request.headers.authorization ?? ''))) {
    return refuse(403, 'MissingAuthenticationTokenException', 'Missing Authentication Token');
  }
  if (!novaSonicSimulatorModels.includes(model)) return refuse(400, 'ValidationException', `The provided model identifier is invalid: ${model}`);
  record(200);
  response.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream', 'x-amzn-requestid': randomUUID() });

  const codec = new EventStreamCodec(text.toUtf8, text.fromUtf8);
  const sessionId = randomUUID();
  const completionId = randomUUID();
  let finished = false;
  const write = (message: Message) => {
    if (!finished) response.write(codec.encode(message));
  };
  const emit = (name: string, body: Body) =>
    write({
      headers: { ':message-type': stringHeader('event'), ':event-type': stringHeader('chunk'), ':content-type': stringHeader('application/json') },
      body: text.fromUtf8(JSON.stringify({ bytes: Buffer.from(JSON.stringify({ event: { [name]: { sessionId, promptName, completionId, ...body } } })).toString('base64') })),
    });
  const finish = (failure?: string, exception = 'validationException') => {
    if (finished) return;
    clearTimeout(connectionLimit);
    ended(failure ?? (stage === 'ended' ? 'sessionEnd' : 'end of input'));
    if (failure) {
      write({
        headers: { ':message-type': stringHeader('exception'), ':exception-type': stringHeader(exception), ':content-type': stringHeader('application/json') },
        body: text.fromUtf8(JSON.stringify({ message: failure })),
      });
    }
    finished = true;
    response.end();
  };
  const connectionLimit = setTimeout(() => finish(novaSonicTimeoutMessage, 'modelTimeoutException'), maxConnectionMs);

  // The session's state, as the input events build it.
  let stage: 'new' | 'session' | 'prompt' | 'ended' = 'new';
  let promptName = '';
  let outputRate = 8_000;
  let tools: LanguageModelV4FunctionTool[] = [];
  const open = new Map<string, { type: string; role: string; history?: boolean; rate?: number; toolUseId?: string; text: string[] }>();
  let systemSeen = false;
  let audioStarted = false;
  let historyStarted = false;
  let historyTotalBytes = 0;
  /** What the model took in and gave out so far, and the tokens of it last reported. */
  const counted = { inputAudioMs: 0, inputCharacters: 0, outputAudioMs: 0, outputCharacters: 0 };
  let reported = tokenCounts(0, 0, 0, 0);
  const conversation: LanguageModelV4Prompt = [];
  const pendingTools = new Map<string, string>();
  /** The reply whose audio is being sent; set to undefined when it is interrupted. */
  let speaking: { interrupted: boolean } | undefined;
  let replies = Promise.resolve();

  const content = (role: string, type: string, stageName: string | undefined, events: Array<[string, Body]>, stopReason: string) => {
    const contentId = randomUUID();
    emit('contentStart', {
      contentId,
      type,
      role,
      ...(stageName ? { additionalModelFields: JSON.stringify({ generationStage: stageName }) } : {}),
      ...(type === 'TEXT' ? { textOutputConfiguration: { mediaType: 'text/plain' } } : {}),
      ...(type === 'AUDIO' ? { audioOutputConfiguration: { mediaType: 'audio/lpcm', sampleRateHertz: outputRate, sampleSizeBits: 16, channelCount: 1, encoding: 'base64', audioType: 'SPEECH' } } : {}),
      ...(type === 'TOOL' ? { toolUseOutputConfiguration: { mediaType: 'application/json' } } : {}),
    });
    for (const [name, body] of events) emit(name, { contentId, ...body });
    emit('contentEnd', { contentId, type, stopReason });
  };
  /** A documented `usageEvent`: the tokens since the last one, and the stream's totals. */
  const reportUsage = () => {
    const total = tokenCounts(
      Math.floor((counted.inputAudioMs * speechTokensPerSecond) / 1_000),
      Math.ceil(counted.inputCharacters / charactersPerTextToken),
      Math.floor((counted.outputAudioMs * speechTokensPerSecond) / 1_000),
      Math.ceil(counted.outputCharacters / charactersPerTextToken),
    );
    const delta = tokenCounts(
      total.input.speechTokens - reported.input.speechTokens,
      total.input.textTokens - reported.input.textTokens,
      total.output.speechTokens - reported.output.speechTokens,
      total.output.textTokens - reported.output.textTokens,
    );
    reported = total;
    const inputTokens = total.input.speechTokens + total.input.textTokens;
    const outputTokens = total.output.speechTokens + total.output.textTokens;
    emit('usageEvent', { details: { delta, total }, totalInputTokens: inputTokens, totalOutputTokens: outputTokens, totalTokens: inputTokens + outputTokens });
  };
  const reply = async () => {
    prompted(structuredClone(conversation));
    const decided = await builtinReply(conversation, tools);
    const toolCall = decided.toolCall;
    conversation.push({
      role: 'assistant',
      content: [
        ...(decided.text ? [{ type: 'text' as const, text: decided.text }] : []),
        ...(toolCall ? [{ type: 'tool-call' as const, toolCallId: toolCall.toolCallId, toolName: toolCall.toolName, input: JSON.parse(toolCall.input) as unknown }] : []),
      ],
    });
    // What it says before asking for a tool (a goodbye before `end_conversation`) is a part of the turn, not its end.
    if (decided.text && !(await say(decided.text, toolCall ? 'PARTIAL_TURN' : 'END_TURN'))) return;
    if (toolCall) {
      pendingTools.set(toolCall.toolCallId, toolCall.toolName);
      counted.outputCharacters += toolCall.toolName.length + toolCall.input.length;
      reportUsage();
      content('TOOL', 'TOOL', undefined, [['toolUse', { role: 'TOOL', content: toolCall.input, toolName: toolCall.toolName, toolUseId: toolCall.toolCallId }]], 'TOOL_USE');
    }
  };
  /** Says `text`: its planned text, its audio, its final text; false when the caller spoke over it. */
  const say = async (text: string, stopReason: 'PARTIAL_TURN' | 'END_TURN'): Promise<boolean> => {
    content('ASSISTANT', 'TEXT', 'SPECULATIVE', [['textOutput', { role: 'ASSISTANT', content: text }]], 'PARTIAL_TURN');
    const spoken = await engines.speak(text, { provider: 'builtin', voiceId: 'en-us', language: 'en-US' });
    const pcm = pcm16ToBytes(resample(muLawDecode(spoken), 8_000, outputRate));
    const turn = { interrupted: false };
    speaking = turn;
    const contentId = randomUUID();
    emit('contentStart', {
      contentId,
      type: 'AUDIO',
      role: 'ASSISTANT',
      audioOutputConfiguration: { mediaType: 'audio/lpcm', sampleRateHertz: outputRate, sampleSizeBits: 16, channelCount: 1, encoding: 'base64', audioType: 'SPEECH' },
    });
    const chunkBytes = (replyChunkBytes * 2 * outputRate) / 8_000;
    let sentBytes = 0;
    for (let offset = 0; offset < pcm.length && !turn.interrupted && !finished; offset += chunkBytes) {
      if (offset > 0) await delay(replyChunkEveryMs);
      const chunk = pcm.subarray(offset, offset + chunkBytes);
      emit('audioOutput', { contentId, role: 'ASSISTANT', content: Buffer.from(chunk).toString('base64') });
      sentBytes += chunk.length;
    }
    speaking = undefined;
    counted.outputCharacters += text.length;
    counted.outputAudioMs += (sentBytes / 2 / outputRate) * 1_000;
    reportUsage();
    if (turn.interrupted) {
      content('ASSISTANT', 'TEXT', 'SPECULATIVE', [['textOutput', { role: 'ASSISTANT', content: '{ "interrupted" : true }' }]], 'INTERRUPTED');
      emit('contentEnd', { contentId, type: 'AUDIO', stopReason: 'INTERRUPTED' });
      return false;
    }
    emit('contentEnd', { contentId, type: 'AUDIO', stopReason: 'PARTIAL_TURN' });
    content('ASSISTANT', 'TEXT', 'FINAL', [['textOutput', { role: 'ASSISTANT', content: text }]], stopReason);
    return true;
  };
  const queueReply = () => {
    replies = replies.then(reply).catch((error: Error) => finish(error.message));
  };
  const heard = (said: string) => {
    content('USER', 'TEXT', 'FINAL', [['textOutput', { role: 'USER', content: said }]], 'END_TURN');
    conversation.push({ role: 'user', content: [{ type: 'text', text: said }] });
    queueReply();
  };
  const cutter = utteranceCutter({
    endpointingMs: pauseMs,
    onSpeechStarted: () => {
      if (speaking) speaking.interrupted = true;
    },
    onUtterance: (audio) => {
      replies = replies.then(async () => {
        const said = audio.length > 0 ? await engines.recognise(audio).catch(() => '') : '';
        if (said) heard(said);
      });
    },
  });

  const validate = (name: string, body: Body): string | undefined => {
    if (stage === 'ended') return `Event ${name} received after sessionEnd`;
    if (name === 'sessionStart') {
      if (stage !== 'new') return 'sessionStart must be the first event, and only once';
      const inference = body.inferenceConfiguration as Body | undefined;
      if (!inference || typeof inference.maxTokens !== 'number') return 'sessionStart requires inferenceConfiguration with maxTokens';
      stage = 'session';
      return undefined;
    }
    if (stage === 'new') return `The first event must be sessionStart, not ${name}`;
    if (name === 'sessionEnd') {
      if (promptName) return 'sessionEnd before promptEnd';
      stage = 'ended';
      return undefined;
    }
    if (name === 'promptStart') {
      if (stage !== 'session' || promptName) return 'promptStart must follow sessionStart, once';
      if (typeof body.promptName !== 'string' || !body.promptName) return 'promptStart requires a promptName';
      const audio = body.audioOutputConfiguration as Body | undefined;
      if (!audio || audio.mediaType !== 'audio/lpcm' || audio.encoding !== 'base64' || audio.sampleSizeBits !== 16 || audio.channelCount !== 1 || audio.audioType !== 'SPEECH') {
        return 'audioOutputConfiguration must be audio/lpcm, 16-bit, mono, base64, SPEECH';
      }
      if (!outputRates.includes(Number(audio.sampleRateHertz))) return `Unsupported output sampleRateHertz: ${String(audio.sampleRateHertz)}`;
      if (!voices.includes(String(audio.voiceId))) return `Unsupported voiceId: ${String(audio.voiceId)}`;
      const specs = ((body.toolConfiguration as Body | undefined)?.tools ?? []) as Array<{ toolSpec?: { name?: string; description?: string; inputSchema?: { json?: string } } }>;
      try {
        tools = specs.map(({ toolSpec }) => ({ type: 'function', name: String(toolSpec?.name), description: toolSpec?.description, inputSchema: JSON.parse(String(toolSpec?.inputSchema?.json)) as Body }));
      } catch {
        return 'toolSpec.inputSchema.json must be a JSON schema, as a string';
      }
      promptName = body.promptName;
      outputRate = Number(audio.sampleRateHertz);
      stage = 'prompt';
      return undefined;
    }
    if (stage !== 'prompt' || body.promptName !== promptName) return `${name} must name the open prompt`;
    if (name === 'promptEnd') {
      if (open.size > 0) return 'promptEnd with contents still open';
      promptName = '';
      stage = 'session';
      return undefined;
    }
    const contentName = String(body.contentName ?? '');
    if (name === 'contentStart') {
      if (!contentName || open.has(contentName)) return 'contentStart requires a new contentName';
      const type = String(body.type);
      const role = String(body.role);
      if (!systemSeen && !(type === 'TEXT' && role === 'SYSTEM')) return 'The first content must be the SYSTEM text';
      if (type === 'TEXT') {
        if ((body.textInputConfiguration as Body | undefined)?.mediaType !== 'text/plain') return 'textInputConfiguration.mediaType must be text/plain';
        if (!['SYSTEM', 'USER', 'ASSISTANT'].includes(role)) return `Unsupported role for TEXT: ${role}`;
        // A USER text that is not interactive, or an ASSISTANT one, is the conversation's history, not a turn.
        const history = role === 'ASSISTANT' || (role === 'USER' && body.interactive === false);
        if (history && audioStarted) return 'A chat history must come after the system prompt and before audio streaming begins';
        if (history && !historyStarted && role !== 'USER') return 'The first message of a chat history must be from the USER';
        historyStarted ||= history;
        open.set(contentName, { type, role, history, text: [] });
        return undefined;
      }
      if (type === 'AUDIO') {
        const audio = body.audioInputConfiguration as Body | undefined;
        if (role !== 'USER') return 'AUDIO content must have the USER role';
        if (!audio || audio.mediaType !== 'audio/lpcm' || audio.encoding !== 'base64' || audio.sampleSizeBits !== 16 || audio.channelCount !== 1 || audio.audioType !== 'SPEECH') {
          return 'audioInputConfiguration must be audio/lpcm, 16-bit, mono, base64, SPEECH';
        }
        if (!inputRates.includes(Number(audio.sampleRateHertz))) return `Unsupported input sampleRateHertz: ${String(audio.sampleRateHertz)}`;
        audioStarted = true;
        open.set(contentName, { type, role, rate: Number(audio.sampleRateHertz), text: [] });
        return undefined;
      }
      if (type === 'TOOL') {
        const result = body.toolResultInputConfiguration as Body | undefined;
        if (role !== 'TOOL' || !result || !pendingTools.has(String(result.toolUseId))) return 'A TOOL content must answer a toolUseId the model asked for';
        open.set(contentName, { type, role, toolUseId: String(result.toolUseId), text: [] });
        return undefined;
      }
      return `Unsupported content type: ${type}`;
    }
    const opened = open.get(contentName);
    if (!opened) return `${name} names no open content`;
    if (name === 'textInput' && opened.type === 'TEXT') {
      const content = String(body.content ?? '');
      if (opened.history) {
        const bytes = Buffer.byteLength(content);
        if (bytes > historyTextInputBytes) return 'A textInput of a chat history must be at most 1 KB';
        historyTotalBytes += bytes;
        if (historyTotalBytes > historyBytes) return 'A chat history must be at most 40 KB';
      }
      opened.text.push(content);
      return undefined;
    }
    if (name === 'toolResult' && opened.type === 'TOOL') {
      opened.text.push(String(body.content ?? ''));
      return undefined;
    }
    if (name === 'audioInput' && opened.type === 'AUDIO') {
      const bytes = Buffer.from(String(body.content ?? ''), 'base64');
      if (bytes.length % 2 !== 0) return 'audioInput must be whole 16-bit samples';
      counted.inputAudioMs += (bytes.length / 2 / (opened.rate ?? 8_000)) * 1_000;
      cutter.push(muLawEncode(resample(bytesToPcm16(bytes), opened.rate ?? 8_000, 8_000)));
      return undefined;
    }
    if (name === 'contentEnd') {
      open.delete(contentName);
      closed(opened);
      return undefined;
    }
    return `Unexpected ${name} in a ${opened.type} content`;
  };
  const closed = (opened: { type: string; role: string; history?: boolean; toolUseId?: string; text: string[] }) => {
    const joined = opened.text.join('');
    counted.inputCharacters += joined.length;
    if (opened.history) {
      conversation.push(opened.role === 'USER' ? { role: 'user', content: [{ type: 'text', text: joined }] } : { role: 'assistant', content: [{ type: 'text', text: joined }] });
    } else if (opened.role === 'SYSTEM') {
      systemSeen = true;
      conversation.push({ role: 'system', content: joined });
    } else if (opened.type === 'TOOL' && opened.toolUseId) {
      const toolName = pendingTools.get(opened.toolUseId)!;
      pendingTools.delete(opened.toolUseId);
      conversation.push({ role: 'tool', content: [{ type: 'tool-result', toolCallId: opened.toolUseId, toolName, output: { type: 'text', value: joined } }] });
      queueReply();
    } else if (opened.type === 'TEXT' && opened.role === 'USER') {
      // A typed turn: answered as if it had been said.
      conversation.push({ role: 'user', content: [{ type: 'text', text: joined }] });
      queueReply();
    } else if (opened.type === 'AUDIO' && cutter.hearing) cutter.flush();
  };

  let started = false;
  let buffered = Buffer.alloc(0);
  request.on('data', (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    while (!finished && buffered.length >= 4 && buffered.length >= buffered.readUInt32BE(0)) {
      const length = buffered.readUInt32BE(0);
      const signed = codec.decode(buffered.subarray(0, length));
      buffered = buffered.subarray(length);
      if (!signed.headers[':chunk-signature'] || !signed.headers[':date']) return finish('An event stream message is not signed');
      if (signed.body.length === 0) continue;
      const message = codec.decode(signed.body);
      if (message.headers[':event-type']?.value !== 'chunk') return finish(`Unknown event type: ${String(message.headers[':event-type']?.value)}`);
      let event: { event?: Record<string, Body> };
      try {
        const { bytes } = JSON.parse(text.toUtf8(message.body)) as { bytes: string };
        event = JSON.parse(Buffer.from(bytes, 'base64').toString('utf8')) as typeof event;
      } catch {
        return finish('A chunk must be JSON with base64 bytes of a JSON event');
      }
      const entries = Object.entries(event.event ?? {});
      if (entries.length !== 1) return finish('An input event must hold exactly one event');
      const [name, body] = entries[0]!;
      const problem = validate(name, body);
      if (problem) return finish(problem);
      if (!started && stage === 'prompt' && systemSeen) {
        started = true;
        emit('completionStart', {});
      }
      if (name === 'sessionEnd') {
        void replies.then(() => {
          emit('completionEnd', { stopReason: 'END_TURN' });
          finish();
        });
      }
    }
  });
  request.on('end', () => void replies.then(() => finish()));
  response.once('close', () => {
    clearTimeout(connectionLimit);
    if (!finished) ended('reset');
    finished = true;
  });
}

function tokenCounts(inputSpeech: number, inputText: number, outputSpeech: number, outputText: number) {
  return { input: { speechTokens: inputSpeech, textTokens: inputText }, output: { speechTokens: outputSpeech, textTokens: outputText } };
}
