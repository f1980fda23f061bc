/**
 * The OpenAI Realtime simulator, through the adapter: a caller heard, a tool called and its output answered, the
 * welcome said, a reply interrupted and truncated; and the upgrade's checks.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startOpenAIRealtimeSimulator, type OpenAIRealtimeSimulator } from '../../infra/local/openai-realtime-simulator.ts';
import { openAIRealtimeSpeechToSpeech } from '../../shared/speech/openai-realtime.ts';
import type { SpeechToSpeechEvent, SpeechToSpeechOptions } from '../../shared/speech/ports.ts';
import { eventually } from '../support/eventually.ts';
import { protocolEngines, spokenBytes } from '../support/speech.ts';

/** Loud audio (μ-law 0x00 is the largest amplitude) and silence (0xFF is zero), in ms of telephone audio. */
const speech = (ms: number) => new Uint8Array(ms * 8).fill(0x00);
const silence = (ms: number) => new Uint8Array(ms * 8).fill(0xff);

const options: SpeechToSpeechOptions = {
  model: 'gpt-realtime',
  instructions: 'You are the weather line.',
  language: 'en-US',
  voiceId: 'marin',
  tools: [{ name: 'get_weather', description: 'Current weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }],
};

/** Reads events until `stop` says so; the audio joined. */
async function until(events: AsyncIterator<SpeechToSpeechEvent>, stop: (event: SpeechToSpeechEvent) => boolean): Promise<{ events: SpeechToSpeechEvent[]; audio: Buffer }> {
  const seen: SpeechToSpeechEvent[] = [];
  for (;;) {
    const next = await events.next();
    if (next.done) break;
    seen.push(next.value);
    if (stop(next.value)) break;
  }
  return { events: seen, audio: Buffer.concat(seen.flatMap((event) => (event.type === 'audio' ? [event.audio] : []))) };
}
const withoutAudio = (events: SpeechToSpeechEvent[]) => events.filter((event) => event.type !== 'audio' && !(event.type === 'assistant-transcript' && !event.final));

describe('the OpenAI Realtime simulator', () => {
  let simulator: OpenAIRealtimeSimulator;
  const engines = protocolEngines('What is the weather in Paris?');

  beforeAll(async () => {
    simulator = await startOpenAIRealtimeSimulator({ engines, models: ['gpt-realtime'] });
  });
  afterAll(() => simulator.stop());

  it('hears the caller, calls the tool, and speaks the answer after the tool output', async () => {
    const session = openAIRealtimeSpeechToSpeech({ url: `${simulator.url}/v1`, apiKey: simulator.apiKey }).open(options);
    const events = session.events[Symbol.asyncIterator]();
    session.write(speech(600));
    session.write(silence(700));

    const asked = await until(events, (event) => event.type === 'response-done');
    expect(asked.events).toEqual([
      { type: 'speech-started' },
      { type: 'user-transcript', text: 'What is the weather in Paris?' },
      { type: 'tool-call', callId: expect.stringMatching(/^call_/), name: 'get_weather', arguments: '{"city":"Paris"}' },
      { type: 'usage', inputTokens: expect.any(Number), outputTokens: 1 },
      { type: 'response-done' },
    ]);
    const call = asked.events[2] as Extract<SpeechToSpeechEvent, { type: 'tool-call' }>;
    session.toolResult(call.callId, '{"tempC":21}');

    const answered = await until(events, (event) => event.type === 'response-done');
    const answer = 'The get_weather tool returned: {"tempC":21}';
    // A token a word: the answer's words, after a prompt that now holds the tool call and its output.
    expect(withoutAudio(answered.events)).toEqual([
      { type: 'assistant-transcript', text: answer, final: true },
      { type: 'usage', inputTokens: expect.any(Number), outputTokens: answer.split(' ').length },
      { type: 'response-done' },
    ]);
    const [askedUsage, answeredUsage] = [asked.events[3], withoutAudio(answered.events)[1]] as { inputTokens: number }[];
    expect(answeredUsage!.inputTokens).toBeGreaterThan(askedUsage!.inputTokens);
    expect(answered.audio).toEqual(Buffer.from(spokenBytes(answer)));
    expect(engines.recognised).toHaveLength(1);
    session.close();
  });

  it('says the welcome, and keeps only what was played of an interrupted reply', async () => {
    const session = openAIRealtimeSpeechToSpeech({ url: `${simulator.url}/v1`, apiKey: simulator.apiKey }).open(options);
    const events = session.events[Symbol.asyncIterator]();
    session.say('Welcome to the weather line.');
    const welcome = await until(events, (event) => event.type === 'response-done');
    expect(welcome.audio).toEqual(Buffer.from(spokenBytes('Welcome to the weather line.')));

    // Some 150 deltas: the interruption comes long before the last.
    const long = 'This reply is long enough to be spoken over by the caller before its end. '.repeat(40);
    session.say(long.trim());
    const first = await until(events, (event) => event.type === 'audio');
    expect(first.audio.length).toBeGreaterThan(0);
    const before = simulator.clientEvents.length;
    session.interrupt(100);
    const rest = await until(events, (event) => event.type === 'response-done');
    expect(Buffer.concat([first.audio, rest.audio]).length).toBeLessThan(spokenBytes(long.trim()).length);
    expect(rest.events.some((event) => event.type === 'error')).toBe(false);
    expect(simulator.clientEvents.slice(before)).toEqual([
      { type: 'response.cancel', response_id: expect.any(String) },
      { type: 'conversation.item.truncate', item_id: expect.any(String), content_index: 0, audio_end_ms: 100 },
    ]);
    session.close();
    expect(await eventually(() => simulator.openSessions, (open) => open === 0)).toBe(0);
  });

  it('refuses a wrong key and a model it does not serve on the upgrade, and answers a bad event with an error', async () => {
    const wrongKey = [];
    for await (const event of openAIRealtimeSpeechToSpeech({ url: `${simulator.url}/v1`, apiKey: 'sk-wrong' }).open(options).events) wrongKey.push(event);
    const unknownModel = [];
    for await (const event of openAIRealtimeSpeechToSpeech({ url: `${simulator.url}/v1`, apiKey: simulator.apiKey }).open({ ...options, model: 'gpt-9' }).events) unknownModel.push(event);
    expect(wrongKey).toEqual([{ type: 'error', message: expect.stringContaining('HTTP 401') }]);
    expect(unknownModel).toEqual([{ type: 'error', message: expect.stringContaining('model_not_found') }]);

    const socket = new WebSocket(`${simulator.url.replace('http', 'ws')}/v1/realtime?model=gpt-realtime`, { headers: { authorization: `Bearer ${simulator.apiKey}` } });
    const received: { type: string; error?: { code: string } }[] = [];
    socket.on('message', (data: Buffer) => received.push(JSON.parse(data.toString('utf8')) as { type: string }));
    await new Promise((resolve) => socket.once('open', resolve));
    socket.send(JSON.stringify({ type: 'response.cancel' }));
    socket.send(JSON.stringify({ type: 'conversation.item.create', item: { type: 'function_call_output', call_id: 'call_none', output: '{}' } }));
    socket.send(JSON.stringify({ type: 'session.update', session: { type: 'realtime', audio: { input: { format: { type: 'audio/pcm', rate: 24000 } } } } }));
    const errors = await eventually(() => received.filter((event) => event.type === 'error').map((event) => event.error?.code), (codes) => codes.length >= 3);
    expect(errors).toEqual(['response_cancel_not_active', 'invalid_value', 'invalid_value']);
    expect(received[0]?.type).toBe('session.created');
    socket.close();
  });
});
