/**
 * The Amazon Nova Sonic adapter of the speech-to-speech port: its events against the documented examples
 * (decisions 496, 497), and against its simulator (HTTP/2, AWS event streams), with protocol engines and with real
 * audio (decision 498).
 */
import { BedrockRuntimeClient, InvokeModelWithBidirectionalStreamCommand } from '@aws-sdk/client-bedrock-runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LanguageModelV4Message, LanguageModelV4Prompt } from '@ai-sdk/provider';
import { novaSonicTimeoutMessage, startNovaSonicSimulator, type NovaSonicSimulator } from '../../infra/local/nova-sonic-simulator.ts';
import { builtinSimulatorEngines, type SpeechSimulator } from '../../infra/local/speech-simulator-server.ts';
import { novaSonicModel, novaSonicSession, novaSonicSpeechToSpeech, type NovaSonicInput } from '../../shared/speech/nova-sonic.ts';
import type { SpeechToSpeechEvent, SpeechToSpeechOptions, SpeechToSpeechSession } from '../../shared/speech/ports.ts';
import { muLawEncode } from '../../shared/speech/telephone-audio.ts';
import { wordErrorRate } from '../../shared/speech/word-error-rate.ts';
import * as docs from '../fixtures/nova-sonic/documented-examples.ts';
import { eventually } from '../support/eventually.ts';
import { protocolEngines, spokenBytes } from '../support/speech.ts';

const weatherTool = { name: 'get_weather', description: 'Current weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } };
const options = (more: Partial<SpeechToSpeechOptions> = {}): SpeechToSpeechOptions => ({
  model: novaSonicModel,
  instructions: 'You are a helpful phone agent.',
  language: 'en-US',
  tools: [weatherTool],
  ...more,
});

async function drain(input: AsyncIterable<NovaSonicInput>): Promise<NovaSonicInput[]> {
  const events: NovaSonicInput[] = [];
  for await (const event of input) events.push(event);
  return events;
}

/** The session's events, gathered as they come; `done` once they end. */
function read(session: SpeechToSpeechSession): { seen: SpeechToSpeechEvent[]; done: Promise<void> } {
  const seen: SpeechToSpeechEvent[] = [];
  const done = (async () => {
    for await (const event of session.events) seen.push(event);
  })();
  return { seen, done };
}

const nameOf = (event: NovaSonicInput) => Object.keys(event.event)[0]!;
const bodyOf = (event: NovaSonicInput) => Object.values(event.event)[0]!;
const keysOf = (event: { event: Record<string, Record<string, unknown>> }) => Object.keys(Object.values(event.event)[0]!).sort();

describe('the Nova Sonic adapter against the documented events', () => {
  it('sends the documented input events in the documented order, with 8 kHz LPCM both ways and the tools as JSON schema strings', async () => {
    const session = novaSonicSession(options({ voiceId: 'tiffany' }));
    session.port.write(new Uint8Array([0xff, 0x80]));
    session.port.toolResult('tooluse-1', 'Sunny');
    session.port.close();
    const events = await drain(session.current.input);

    expect(events.map(nameOf)).toEqual([
      'sessionStart',
      'promptStart',
      'contentStart',
      'textInput',
      'contentEnd',
      'contentStart',
      'audioInput',
      'contentStart',
      'toolResult',
      'contentEnd',
      'contentEnd',
      'promptEnd',
      'sessionEnd',
    ]);
    const [sessionStart, promptStart, systemStart, system, systemEnd, audioStart, audio, toolStart, toolResult, toolEnd, audioEnd, promptEnd, sessionEnd] = events as [NovaSonicInput, ...NovaSonicInput[]];
    // Each event has the documented fields, no more and no fewer.
    expect(keysOf(sessionStart)).toEqual(keysOf(docs.input.sessionStart));
    expect(keysOf(promptStart!)).toEqual(keysOf(docs.input.promptStart));
    expect(keysOf(systemStart!)).toEqual(keysOf(docs.input.systemContentStart));
    expect(keysOf(system!)).toEqual(keysOf(docs.input.textInput));
    expect(keysOf(systemEnd!)).toEqual(keysOf(docs.input.contentEnd));
    expect(keysOf(audioStart!)).toEqual(keysOf(docs.input.audioContentStart));
    expect(keysOf(audio!)).toEqual(keysOf(docs.input.audioInput));
    expect(keysOf(toolStart!)).toEqual(keysOf(docs.input.toolContentStart));
    expect(keysOf(toolResult!)).toEqual(keysOf(docs.input.toolResult));
    expect(keysOf(toolEnd!)).toEqual(keysOf(docs.input.contentEnd));
    expect(keysOf(promptEnd!)).toEqual(keysOf(docs.input.promptEnd));
    expect(sessionEnd).toEqual(docs.input.sessionEnd);

    const documentedAudioOut = docs.input.promptStart.event.promptStart.audioOutputConfiguration;
    expect(bodyOf(promptStart!).audioOutputConfiguration).toEqual({ ...documentedAudioOut, sampleRateHertz: 8000, voiceId: 'tiffany' });
    expect(bodyOf(promptStart!).toolConfiguration).toEqual({
      tools: [{ toolSpec: { name: 'get_weather', description: 'Current weather', inputSchema: { json: JSON.stringify(weatherTool.parameters) } } }],
    });
    expect(bodyOf(systemStart!)).toMatchObject({ type: 'TEXT', role: 'SYSTEM', textInputConfiguration: { mediaType: 'text/plain' } });
    expect(bodyOf(system!).content).toBe('You are a helpful phone agent.');
    expect(bodyOf(audioStart!).audioInputConfiguration).toEqual({ ...docs.input.audioContentStart.event.contentStart.audioInputConfiguration, sampleRateHertz: 8000 });
    // μ-law 0xff is silence, 0x80 the loudest positive sample: 16-bit little-endian LPCM, base64.
    expect(Buffer.from(String(bodyOf(audio!).content), 'base64')).toEqual(Buffer.from([0x00, 0x00, 0x7c, 0x7d]));
    expect(bodyOf(toolStart!).toolResultInputConfiguration).toEqual(docs.input.toolContentStart.event.contentStart.toolResultInputConfiguration);
    expect(bodyOf(toolResult!).content).toBe('Sunny');
    // Every content is closed under its own name, and all under the one prompt.
    expect(bodyOf(audioEnd!).contentName).toBe(bodyOf(audioStart!).contentName);
    expect(new Set(events.slice(1, -1).map((event) => bodyOf(event).promptName)).size).toBe(1);
  });

  it('says a welcome as an interactive USER text turn, the one way Nova Sonic v1 takes text to answer', async () => {
    const session = novaSonicSession(options());
    session.port.say('Welcome to Acme.');
    session.port.close();
    const events = await drain(session.current.input);

    const turn = events.slice(6, 9);
    expect(turn.map(nameOf)).toEqual(['contentStart', 'textInput', 'contentEnd']);
    expect(keysOf(turn[0]!)).toEqual(keysOf(docs.input.systemContentStart));
    expect(bodyOf(turn[0]!)).toMatchObject({ type: 'TEXT', role: 'USER', interactive: true, textInputConfiguration: { mediaType: 'text/plain' } });
    expect(bodyOf(turn[1]!).content).toBe('Say exactly this to the caller, and nothing else: Welcome to Acme.');
    expect(bodyOf(turn[2]!).contentName).toBe(bodyOf(turn[0]!).contentName);
  });

  it('reports the documented reply as the port says: the caller’s words, the tool call, the planned text, telephone audio, the whole final text, done, its tokens', async () => {
    const session = novaSonicSession(options());
    const { seen, done } = read(session.port);
    for (const event of docs.outputTurn) session.current.receive(event);
    session.current.finish();
    await done;

    expect(seen).toEqual([
        { type: 'user-transcript', text: 'what day is it today' },
        { type: 'tool-call', callId: 'tooluse-1', name: 'getDateAndTimeTool', arguments: '{}' },
        // The reply that asked for the tool is over; the answer after its result is the next one.
        { type: 'response-done' },
        { type: 'assistant-transcript', text: 'Today is Thursday.', final: false },
        { type: 'audio', audio: muLawEncode(new Int16Array([0, 8159])) },
      { type: 'assistant-transcript', text: 'Today is Thursday.', final: true },
      { type: 'response-done' },
      // The usageEvent's delta: speech and text tokens together.
      { type: 'usage', inputTokens: 10, outputTokens: 16 },
    ]);
  });

  it('reports each usageEvent’s delta, never its running totals, and the difference of the totals when it has no delta', async () => {
    const session = novaSonicSession(options());
    const { seen, done } = read(session.port);
    session.current.receive(docs.usageEvent({ input: { speechTokens: 30, textTokens: 200 }, output: { speechTokens: 0, textTokens: 0 } }, { input: { speechTokens: 30, textTokens: 200 }, output: { speechTokens: 0, textTokens: 0 } }));
    session.current.receive(docs.usageEvent({ input: { speechTokens: 5, textTokens: 0 }, output: { speechTokens: 40, textTokens: 9 } }, { input: { speechTokens: 35, textTokens: 200 }, output: { speechTokens: 40, textTokens: 9 } }));
    const withoutDelta = docs.usageEvent({ input: { speechTokens: 0, textTokens: 0 }, output: { speechTokens: 0, textTokens: 0 } }, { input: { speechTokens: 36, textTokens: 200 }, output: { speechTokens: 50, textTokens: 12 } });
    delete (withoutDelta.event.usageEvent.details as { delta?: unknown }).delta;
    session.current.receive(withoutDelta);
    session.current.finish();
    await done;

    expect(seen).toEqual([
      { type: 'usage', inputTokens: 230, outputTokens: 0 },
      { type: 'usage', inputTokens: 5, outputTokens: 49 },
      { type: 'usage', inputTokens: 1, outputTokens: 13 },
    ]);
  });

  it('reports the documented barge-in signal as speech-started, and the interrupted reply as done once', async () => {
    const session = novaSonicSession(options());
    const { seen, done } = read(session.port);
    for (const event of docs.outputBargeIn) session.current.receive(event);
    session.current.finish();
    await done;

    expect(seen.map((event) => event.type)).toEqual(['assistant-transcript', 'audio', 'speech-started', 'response-done']);
  });

  it('drops the rest of a reply’s audio after interrupt, and reports the reply done then, not again when Nova Sonic ends it', async () => {
    const session = novaSonicSession(options());
    const { seen, done } = read(session.port);
    const [, , , audioStart, audioChunk, ...rest] = docs.outputBargeIn;
    for (const event of docs.outputBargeIn.slice(0, 3)) session.current.receive(event);
    session.current.receive(audioStart);
    session.current.receive(audioChunk);
    session.port.interrupt(20);
    session.current.receive(audioChunk);
    for (const event of rest) session.current.receive(event);
    session.current.finish();
    await done;

    expect(seen.map((event) => event.type)).toEqual(['assistant-transcript', 'audio', 'response-done', 'speech-started']);
  });

  it('passes on the next reply after the interrupted one ended, even when no words of the caller came between', async () => {
    const session = novaSonicSession(options());
    const { seen, done } = read(session.port);
    const [, , , audioStart, audioChunk, , , , audioEnd] = docs.outputBargeIn;
    for (const event of docs.outputBargeIn.slice(0, 3)) session.current.receive(event);
    session.current.receive(audioStart);
    session.port.interrupt(0);
    session.current.receive(audioChunk);
    session.current.receive(audioEnd);
    // A new reply: Nova Sonic's documented reply, from its planned text on.
    for (const event of docs.outputTurn.slice(7)) session.current.receive(event);
    session.current.finish();
    await done;

    expect(seen.map((event) => event.type)).toEqual(['assistant-transcript', 'response-done', 'assistant-transcript', 'audio', 'assistant-transcript', 'response-done', 'usage']);
  });
});

describe('the Nova Sonic adapter’s renewal of a stream, against the documented events', () => {
  /** Renewed at the first moment between replies. */
  const renewAtOnce = { maxConnectionMs: 60_000, renewBeforeMs: 60_000, forceBeforeMs: 1_000 };
  const output = (name: string, body: Record<string, unknown>) => ({ event: { [name]: body } });
  /** What Nova Sonic sends for a caller's utterance and the reply to it, in the documented shapes. */
  const turn = (said: string, answer: string) => [
    output('contentStart', { contentId: 'asr', type: 'TEXT', role: 'USER', additionalModelFields: '{"generationStage":"FINAL"}' }),
    output('textOutput', { contentId: 'asr', role: 'USER', content: said }),
    output('contentEnd', { contentId: 'asr', type: 'TEXT', stopReason: 'END_TURN' }),
    output('contentStart', { contentId: 'final', type: 'TEXT', role: 'ASSISTANT', additionalModelFields: '{"generationStage":"FINAL"}' }),
    output('textOutput', { contentId: 'final', role: 'ASSISTANT', content: answer }),
    output('contentEnd', { contentId: 'final', type: 'TEXT', stopReason: 'END_TURN' }),
  ];

  it('opens the next stream with the history after the system prompt, USER first, and closes the old one with the documented closing events', async () => {
    const session = novaSonicSession(options(), renewAtOnce);
    const first = session.current;
    // The documented reply: the caller's words, a tool use answered, then the answer.
    for (const event of docs.outputTurn.slice(0, 7)) first.receive(event);
    expect(session.current).toBe(first);
    session.port.toolResult('tooluse-1', '{"day":"Thursday"}');
    for (const event of docs.outputTurn.slice(7)) first.receive(event);
    const second = session.current;
    expect(second).not.toBe(first);
    session.port.write(new Uint8Array([0xff, 0xff]));
    session.port.close();

    const closing = (await drain(first.input)).slice(-3);
    expect(closing.map(nameOf)).toEqual(['contentEnd', 'promptEnd', 'sessionEnd']);
    const opening = await drain(second.input);
    expect(opening.map(nameOf)).toEqual([
      'sessionStart',
      'promptStart',
      ...['contentStart', 'textInput', 'contentEnd'],
      ...['contentStart', 'textInput', 'contentEnd'],
      ...['contentStart', 'textInput', 'contentEnd'],
      'contentStart',
      'audioInput',
      'contentEnd',
      'promptEnd',
      'sessionEnd',
    ]);
    expect(bodyOf(opening[2]!)).toMatchObject({ role: 'SYSTEM' });
    const history = [opening.slice(5, 8), opening.slice(8, 11)];
    expect(history.map(([start, text]) => [bodyOf(start!).role, bodyOf(start!).interactive, bodyOf(text!).content])).toEqual([
      ['USER', false, 'what day is it today'],
      ['ASSISTANT', false, 'Today is Thursday.'],
    ]);
    for (const [start] of history) expect(keysOf(start!)).toEqual(keysOf(docs.historyMessage.contentStart));
    expect(bodyOf(opening[11]!)).toMatchObject({ type: 'AUDIO', role: 'USER' });
    // The caller's audio goes to the new stream from the switch on.
    expect(bodyOf(opening[12]!).contentName).toBe(bodyOf(opening[11]!).contentName);
  });

  it('renews whatever is under way when the limit is near: the reply being generated reported done as far as it went, the rest of it dropped', async () => {
    const session = novaSonicSession(options(), { maxConnectionMs: 60_000, renewBeforeMs: 0, forceBeforeMs: 59_990 });
    const first = session.current;
    const { seen, done } = read(session.port);
    const [, , , audioStart, audioChunk] = docs.outputBargeIn;
    for (const event of docs.outputBargeIn.slice(0, 3)) first.receive(event);
    first.receive(audioStart);
    first.receive(audioChunk);
    await expect.poll(() => session.current).not.toBe(first);
    first.receive(audioChunk);
    session.port.close();
    await done;

    expect(seen.map((event) => event.type)).toEqual(['assistant-transcript', 'audio', 'response-done']);
    expect((await drain(first.input)).slice(-3).map(nameOf)).toEqual(['contentEnd', 'promptEnd', 'sessionEnd']);
  });

  it('after a ModelTimeoutException, ends the turn that awaited the lost stream’s answer to a tool, and drops that tool’s late result', async () => {
    const session = novaSonicSession(options());
    const first = session.current;
    const { seen, done } = read(session.port);
    for (const event of docs.outputTurn.slice(0, 7)) first.receive(event);
    first.fail(Object.assign(new Error('Model has timed out in processing the request. Try your request again.'), { name: 'ModelTimeoutException' }));
    const second = session.current;
    session.port.toolResult('tooluse-1', '{"day":"Thursday"}');
    second.finish();
    await done;
    session.port.close();

    expect(second).not.toBe(first);
    expect(seen.map((event) => event.type)).toEqual(['user-transcript', 'tool-call', 'response-done', 'response-done']);
    const opening = await drain(second.input);
    expect(opening.filter((event) => bodyOf(event).type === 'TOOL' || nameOf(event) === 'toolResult')).toEqual([]);
    // The caller's words are the new stream's history.
    expect(opening.filter((event) => nameOf(event) === 'textInput').map((event) => bodyOf(event).content)).toEqual(['You are a helpful phone agent.', 'what day is it today']);
  });

  it('keeps the history within the documented bounds: 1 KB a textInput, 40 KB in all, the oldest left out, the first from the user', async () => {
    const session = novaSonicSession(options(), renewAtOnce);
    // A welcome (the model first), then 45 turns of about 1 KB each, one with characters of several bytes.
    session.current.receive(output('contentStart', { contentId: 'welcome', type: 'TEXT', role: 'ASSISTANT', additionalModelFields: '{"generationStage":"FINAL"}' }));
    session.current.receive(output('textOutput', { contentId: 'welcome', role: 'ASSISTANT', content: 'Welcome to Acme.' }));
    session.current.receive(output('contentEnd', { contentId: 'welcome', type: 'TEXT', stopReason: 'END_TURN' }));
    const long = 'é'.repeat(700);
    for (let index = 0; index < 45; index += 1) for (const event of turn(index === 44 ? long : `question ${index} ${'x'.repeat(500)}`, `answer ${index} ${'y'.repeat(500)}`)) session.current.receive(event);
    const last = session.current;
    session.port.close();

    const opening = await drain(last.input);
    const starts = opening.filter((event) => nameOf(event) === 'contentStart' && bodyOf(event).type === 'TEXT' && bodyOf(event).role !== 'SYSTEM');
    const texts = opening.filter((event, index) => nameOf(event) === 'textInput' && index > 4);
    expect(bodyOf(starts[0]!).role).toBe('USER');
    expect(Math.max(...texts.map((event) => Buffer.byteLength(String(bodyOf(event).content))))).toBeLessThanOrEqual(1_024);
    expect(texts.reduce((sum, event) => sum + Buffer.byteLength(String(bodyOf(event).content)), 0)).toBeLessThanOrEqual(40 * 1_024);
    // The newest turns are kept whole, the caller's 1,400 bytes in two textInputs.
    const lastQuestion = opening.filter((event) => nameOf(event) === 'textInput' && String(bodyOf(event).content).startsWith('é'));
    expect(lastQuestion.map((event) => String(bodyOf(event).content)).join('')).toBe(long);
    expect(lastQuestion).toHaveLength(2);
    expect(String(bodyOf(texts.at(-1)!).content)).toBe(`answer 44 ${'y'.repeat(500)}`);
  });
});

const withoutUsage = (events: SpeechToSpeechEvent[]) => events.filter((event) => event.type !== 'usage');

async function collectUntil(session: SpeechToSpeechSession, seen: SpeechToSpeechEvent[], until: (event: SpeechToSpeechEvent) => boolean): Promise<void> {
  const iterator = session.events[Symbol.asyncIterator]();
  for (;;) {
    const next = await iterator.next();
    if (next.done) return;
    seen.push(next.value);
    if (until(next.value)) return;
  }
}

describe('the Nova Sonic adapter against its simulator', () => {
  let simulator: NovaSonicSimulator;
  beforeAll(async () => {
    simulator = await startNovaSonicSimulator({ engines: protocolEngines('tell me the weather please') });
  });
  afterAll(() => simulator.stop());
  /** A simulator whose replies last a minute: time to speak over them. */
  const longReply = new Uint8Array(60_000 * 8).fill(0x10);
  let longReplies: SpeechSimulator;
  beforeAll(async () => {
    longReplies = await startNovaSonicSimulator({ engines: { speak: async () => longReply, recognise: async () => 'hello there' } });
  });
  afterAll(() => longReplies.stop());

  it('hears the caller, asks for the tool, answers after its result with the spoken answer, and ends on close', async () => {
    const session = novaSonicSpeechToSpeech({ region: 'us-east-1', endpoint: simulator.url }).open(options());
    session.write(new Uint8Array(300 * 8).fill(0xff));
    session.write(new Uint8Array(600 * 8).fill(0x00));
    session.write(new Uint8Array(700 * 8).fill(0xff));
    const received: SpeechToSpeechEvent[] = [];
    await collectUntil(session, received, (event) => event.type === 'response-done' || event.type === 'error');
    let seen = withoutUsage(received);
    expect(seen).toEqual([{ type: 'user-transcript', text: 'tell me the weather please' }, { type: 'tool-call', callId: expect.stringMatching(/^call_/), name: 'get_weather', arguments: '{}' }, { type: 'response-done' }]);

    session.toolResult((seen[1] as { callId: string }).callId, 'Sunny, 21 degrees');
    await collectUntil(session, received, (event) => event.type === 'response-done' || event.type === 'error');
    seen = withoutUsage(received);
    const answer = 'The get_weather tool returned: Sunny, 21 degrees';
    expect(seen.slice(3).filter((event) => event.type !== 'audio')).toEqual([
      { type: 'assistant-transcript', text: answer, final: false },
      { type: 'assistant-transcript', text: answer, final: true },
      { type: 'response-done' },
    ]);
    const audio = Buffer.concat(seen.flatMap((event) => (event.type === 'audio' ? [event.audio] : [])));
    expect(audio).toEqual(Buffer.from(spokenBytes(answer)));

    // The simulator's counts, in Nova Sonic's usageEvents: a speech token per 100 ms of audio, a text token per 4
    // characters. In: 1.6 s of the caller and the instructions and the tool result (47 characters); out: the tool use
    // (13 characters) and the answer (48 characters, 480 ms spoken).
    const usage = received.flatMap((event) => (event.type === 'usage' ? [event] : []));
    expect(usage.reduce((sum, event) => sum + event.inputTokens, 0)).toBe(16 + Math.ceil(47 / 4));
    expect(usage.reduce((sum, event) => sum + event.outputTokens, 0)).toBe(Math.ceil(61 / 4) + 4);

    session.close();
    await collectUntil(session, seen, () => false);
    // The documented closing events reached it: the conversation ended with sessionEnd, not a dropped stream.
    expect(await eventually(() => [...simulator.endings], (endings) => endings.length > 0)).toEqual(['sessionEnd']);
    expect(simulator.requests.map((request) => [request.path, request.status])).toContainEqual([`/model/${encodeURIComponent(novaSonicModel)}/invoke-with-bidirectional-stream`, 200]);
  });

  it('stops a reply when the caller speaks over it, with the documented signal, and answers what the caller said', async () => {
    const session = novaSonicSpeechToSpeech({ region: 'us-east-1', endpoint: longReplies.url }).open(options({ tools: [] }));
    session.write(new Uint8Array(600 * 8).fill(0x00));
    session.write(new Uint8Array(700 * 8).fill(0xff));
    const seen: SpeechToSpeechEvent[] = [];
    await collectUntil(session, seen, (event) => event.type === 'audio' || event.type === 'error');
    // Speech while the reply is still being sent: Nova Sonic hears it in the same audio content.
    session.write(new Uint8Array(600 * 8).fill(0x00));
    session.write(new Uint8Array(700 * 8).fill(0xff));
    await collectUntil(session, seen, (event) => event.type === 'response-done' || event.type === 'error');
    await collectUntil(session, seen, (event) => event.type === 'user-transcript' || event.type === 'error');
    session.close();

    const types = withoutUsage(seen).map((event) => event.type).filter((type, index, all) => type !== 'audio' || all[index - 1] !== 'audio');
    expect(types).toEqual(['user-transcript', 'assistant-transcript', 'audio', 'speech-started', 'response-done', 'user-transcript']);
    const received = seen.reduce((bytes, event) => bytes + (event.type === 'audio' ? event.audio.length : 0), 0);
    expect(received).toBeLessThan(longReply.length);
  });

  it('ends the session with a validationException for a tool result the model never asked for', async () => {
    const session = novaSonicSpeechToSpeech({ region: 'us-east-1', endpoint: simulator.url }).open(options());
    session.toolResult('tooluse-never-asked', '{}');
    const seen: SpeechToSpeechEvent[] = [];
    await collectUntil(session, seen, () => false);
    expect(seen).toEqual([{ type: 'error', message: 'bedrock: ValidationException: A TOOL content must answer a toolUseId the model asked for' }]);
  });

  it('refuses a chat history out of its documented place and bounds, with a validationException', async () => {
    const client = new BedrockRuntimeClient({ region: 'us-east-1', endpoint: simulator.url, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
    /** Sends the documented opening, then `events`, and returns how Bedrock ended the stream. */
    const refusal = async (events: object[]) => {
      const opening = [docs.input.sessionStart, docs.input.promptStart, docs.input.systemContentStart, docs.input.textInput, docs.input.contentEnd];
      async function* body() {
        for (const event of [...opening, ...events]) yield { chunk: { bytes: new TextEncoder().encode(JSON.stringify(event)) } };
      }
      try {
        const response = await client.send(new InvokeModelWithBidirectionalStreamCommand({ modelId: novaSonicModel, body: body() }));
        for await (const part of response.body ?? []) if (!part.chunk) return Object.keys(part)[0];
        return 'ended';
      } catch (error) {
        return `${(error as Error).name}: ${(error as Error).message}`;
      }
    };
    const message = (role: string, content: string): NovaSonicInput[] => {
      const contentName = `history-${role}`;
      return [
        { event: { contentStart: { ...docs.historyMessage.contentStart.event.contentStart, contentName, role, interactive: false } } },
        { event: { textInput: { ...docs.historyMessage.textInput.event.textInput, contentName, content } } },
        { event: { contentEnd: { ...docs.historyMessage.contentEnd.event.contentEnd, contentName } } },
      ];
    };

    expect(await refusal(message('ASSISTANT', 'Hello!'))).toBe('ValidationException: The first message of a chat history must be from the USER');
    expect(await refusal(message('USER', 'x'.repeat(1_025)))).toBe('ValidationException: A textInput of a chat history must be at most 1 KB');
    expect(await refusal([docs.input.audioContentStart, ...message('USER', 'Hello')])).toBe('ValidationException: A chat history must come after the system prompt and before audio streaming begins');
  });

  it('fails the session with the validation error Bedrock gives an unknown model', async () => {
    const session = novaSonicSpeechToSpeech({ region: 'us-east-1', endpoint: simulator.url }).open(options({ model: 'amazon.nova-pro-v1:0' }));
    const seen: SpeechToSpeechEvent[] = [];
    await collectUntil(session, seen, () => false);
    expect(seen).toEqual([{ type: 'error', message: expect.stringMatching(/^bedrock: ValidationException \(HTTP 400\): The provided model identifier is invalid/) }]);
  });
});

describe('the Nova Sonic adapter over more than one stream (Bedrock’s maximum connection duration)', () => {
  const question = 'tell me the weather please';
  /** An utterance of the caller: speech, then the silence that ends it. */
  const speak = (session: SpeechToSpeechSession) => {
    session.write(new Uint8Array(600 * 8).fill(0x00));
    session.write(new Uint8Array(700 * 8).fill(0xff));
  };
  const untilDone = (event: SpeechToSpeechEvent) => event.type === 'response-done' || event.type === 'error';
  const textOf = (message: LanguageModelV4Message) => (typeof message.content === 'string' ? message.content : message.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join(''));
  const rolesAndTexts = (prompt: LanguageModelV4Prompt | undefined) => prompt?.map((message) => [message.role, textOf(message)]);

  it('renews the stream between replies before the limit: the old one closed with the closing events, the new one given the history, no reply cut', async () => {
    const simulator = await startNovaSonicSimulator({ engines: protocolEngines(question), maxConnectionMs: 20_000 });
    try {
      // The renewal margin is the whole limit: the stream is renewed at the first moment between replies.
      const limits = { maxConnectionMs: 20_000, renewBeforeMs: 20_000, forceBeforeMs: 1_000 };
      const session = novaSonicSpeechToSpeech({ region: 'us-east-1', endpoint: simulator.url, limits }).open(options({ tools: [] }));
      const seen: SpeechToSpeechEvent[] = [];
      speak(session);
      await collectUntil(session, seen, untilDone);
      const firstAnswer = `You said: "${question}". I am the built-in offline model; connect a provider model for real answers.`;

      // The reply ended, so a second stream took over and the first was closed as documented.
      expect(await eventually(() => [...simulator.endings], (endings) => endings.length > 0)).toEqual(['sessionEnd']);
      expect(simulator.requests.map((request) => request.status)).toEqual([200, 200]);

      speak(session);
      await collectUntil(session, seen, (event) => untilDone(event) && seen.filter((earlier) => earlier.type === 'response-done').length === 2);
      session.close();
      await collectUntil(session, seen, () => false);

      const replies = withoutUsage(seen).filter((event) => event.type !== 'audio');
      expect(replies).toEqual([
        { type: 'user-transcript', text: question },
        { type: 'assistant-transcript', text: firstAnswer, final: false },
        { type: 'assistant-transcript', text: firstAnswer, final: true },
        { type: 'response-done' },
        // Heard on the second stream.
        { type: 'user-transcript', text: question },
        { type: 'assistant-transcript', text: firstAnswer, final: false },
        { type: 'assistant-transcript', text: firstAnswer, final: true },
        { type: 'response-done' },
      ]);
      // Each reply's audio whole: nothing of the first was cut by the renewal.
      const audio = Buffer.concat(seen.flatMap((event) => (event.type === 'audio' ? [event.audio] : [])));
      expect(audio).toEqual(Buffer.concat([spokenBytes(firstAnswer), spokenBytes(firstAnswer)]));
      // The model answered on the second stream with the conversation so far: the history after the system prompt.
      expect(rolesAndTexts(simulator.prompts[1])).toEqual([
        ['system', 'You are a helpful phone agent.'],
        ['user', question],
        ['assistant', firstAnswer],
        ['user', question],
      ]);
      // The second reply ended within the margin too: a third stream took over, and each ended with sessionEnd.
      expect(await eventually(() => [...simulator.endings], (endings) => endings.length > 2)).toEqual(['sessionEnd', 'sessionEnd', 'sessionEnd']);
    } finally {
      await simulator.stop();
    }
  });

  it('resumes after the ModelTimeoutException Bedrock ends a stream with at its limit, with the history', async () => {
    const simulator = await startNovaSonicSimulator({ engines: protocolEngines(question), maxConnectionMs: 4_000 });
    try {
      // The adapter's own limit is Nova Sonic's 8 minutes: it does not renew before this simulator's.
      const session = novaSonicSpeechToSpeech({ region: 'us-east-1', endpoint: simulator.url }).open(options({ tools: [] }));
      const seen: SpeechToSpeechEvent[] = [];
      speak(session);
      await collectUntil(session, seen, untilDone);

      expect(await eventually(() => [...simulator.endings], (endings) => endings.length > 0)).toEqual([novaSonicTimeoutMessage]);
      // The caller speaks once the adapter has opened the next stream (what reaches a stream already timed out is lost).
      expect(await eventually(() => simulator.requests.length, (count) => count === 2)).toBe(2);
      speak(session);
      await collectUntil(session, seen, (event) => untilDone(event) && seen.filter((earlier) => earlier.type === 'response-done').length === 2);
      session.close();

      expect(seen.filter((event) => event.type === 'error')).toEqual([]);
      expect(seen.filter((event) => event.type === 'user-transcript')).toHaveLength(2);
      expect(rolesAndTexts(simulator.prompts[1])?.slice(0, 3)).toEqual([
        ['system', 'You are a helpful phone agent.'],
        ['user', question],
        ['assistant', `You said: "${question}". I am the built-in offline model; connect a provider model for real answers.`],
      ]);
    } finally {
      await simulator.stop();
    }
  });
});

describe('the Nova Sonic adapter against its simulator, with real audio', () => {
  const engines = builtinSimulatorEngines();
  let simulator: SpeechSimulator;
  beforeAll(async () => {
    simulator = await startNovaSonicSimulator({ engines });
  });
  afterAll(() => simulator.stop());

  it('hears a spoken question, calls the tool, and speaks an answer the built-in recogniser makes out', { timeout: 120_000 }, async () => {
    const session = novaSonicSpeechToSpeech({ region: 'us-east-1', endpoint: simulator.url }).open(options());
    const question = await engines.speak('Tell me the weather please.', { provider: 'builtin', voiceId: 'en-us', language: 'en-US' });
    session.write(new Uint8Array(300 * 8).fill(0xff));
    session.write(question);
    session.write(new Uint8Array(800 * 8).fill(0xff));
    const seen: SpeechToSpeechEvent[] = [];
    await collectUntil(session, seen, (event) => event.type === 'response-done' || event.type === 'error');
    const [heard, call] = withoutUsage(seen);
    expect(heard).toMatchObject({ type: 'user-transcript', text: expect.stringContaining('weather') });
    expect(call).toMatchObject({ type: 'tool-call', name: 'get_weather' });

    session.toolResult((call as { callId: string }).callId, 'It is sunny and warm today.');
    await collectUntil(session, seen, (event) => event.type === 'response-done' || event.type === 'error');
    const audio = Buffer.concat(seen.flatMap((event) => (event.type === 'audio' ? [event.audio] : [])));
    const answer = 'The get_weather tool returned: It is sunny and warm today.';
    expect(seen.at(-2)).toEqual({ type: 'assistant-transcript', text: answer, final: true });
    const recognised = await engines.recognise(audio);
    // eSpeak NG into PocketSphinx over telephone audio (docs/voice.md#built-in-speech): most words, not all.
    expect(wordErrorRate(answer, recognised)).toBeLessThan(0.9);
    expect(recognised).toContain('warm today');
    session.close();
  });
});
