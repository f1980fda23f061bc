/**
 * Whole calls through Twilio Media Streams on the local runtime, with real audio: the simulator's callee speaks its
 * lines with eSpeak NG and hears the agent with PocketSphinx, over the media worker (its own process, built-in
 * engines both ways). The lines are ones the built-in recogniser makes out ("Tell me the weather please." is heard as
 * "the weather leave", "Okay, bye bye." as "okay bye bye"), so that the agent's choices are the test's.
 */
import { createServer } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { wordErrorRate } from '../../shared/speech/word-error-rate.ts';
import { eventually } from '../support/eventually.ts';
import { listenOnLoopback } from '../support/loopback-server.ts';
import { expectEchoCutShort, sessionEvents, voiceOrg, voiceTestApi, type VoiceOrg } from '../support/voice.ts';

const suite = voiceTestApi();
const { receiver, simulator } = suite;

/** What the weather API answers, in words a recogniser can hear. */
const forecast = 'Sunny and warm all day.';
const weather = createServer((_request, response) => response.writeHead(200, { 'content-type': 'text/plain' }).end(forecast));
let weatherUrl = '';
beforeAll(async () => {
  weatherUrl = `http://127.0.0.1:${await listenOnLoopback(weather)}/weather`;
});
afterAll(() => new Promise((resolveClose) => weather.close(resolveClose)));

/** An agent on the media worker: a built-in voice, with a weather tool whose city it need not be told. */
async function workerOrg(agent: object = {}): Promise<VoiceOrg> {
  const org = await voiceOrg(suite.api, receiver, suite.receiverUrl, { agent: { voice: { provider: 'builtin', voiceId: 'en-us' }, ...agent } });
  const tool = await suite.api.request('POST', '/v1/chat/tools', {
    key: org.key,
    body: {
      name: 'get_weather',
      description: 'Current weather',
      type: 'API_TOOL',
      ajvPropertiesSchema: { type: 'object', properties: { city: { type: 'string' } } },
      apiTool: { url: weatherUrl, method: 'GET' },
    },
  });
  expect(tool.status, tool.text).toBe(201);
  const patched = await suite.api.request('PATCH', `/v2/chat/agents/${org.agentId}`, { key: org.key, body: { tools: [{ toolId: tool.body.id }] } });
  expect(patched.status, patched.text).toBe(200);
  return org;
}

async function call(org: VoiceOrg, to: string): Promise<{ sessionId: string; callSid: string }> {
  const started = await suite.api.request('POST', `/api/v1/phone-numbers/${org.phoneNumberId}/calls/start`, { key: org.key, body: { to_phone_number: to, agent_id: org.agentId } });
  expect(started.status, started.text).toBe(201);
  const { sessionId } = started.body;
  const session = await eventually(() => suite.api.request('GET', `/api/v1/chat/sessions/${sessionId}`, { key: org.key }), (found) => Boolean(found.body.metadata?.roomName));
  return { sessionId, callSid: session.body.metadata.roomName };
}

const messages = async (org: VoiceOrg, sessionId: string) => (await suite.api.request('GET', `/api/v1/chat/sessions/${sessionId}/messages?limit=50`, { key: org.key })).body.data;

/**
 * The word error rate, agent to callee, that the built-in engines reach at most over a call's replies (eSpeak NG into
 * PocketSphinx over telephone audio: 0.75–0.8 measured on these replies, alone and on the line).
 */
const heardWerBound = 0.9;

describe('a call through Twilio Media Streams', () => {
  it('is heard, answered with a tool call, spoken back, takes a key press, and ends once when the agent says goodbye', async () => {
    const org = await workerOrg();
    const to = '+15550106';
    simulator().setScript(to, { steps: [{ say: 'Tell me the weather please.' }, { dtmf: '5' }, { say: 'Okay, bye bye.' }], then: 'stay' });
    const { sessionId, callSid } = await call(org, to);
    const events = await sessionEvents(receiver, org.webhookPath, sessionId);
    const ended = events.filter((receipt) => receipt.body.eventType === 'session.ended');
    expect(ended).toHaveLength(1);
    expect(ended[0]!.body).toMatchObject({ state: 'CLOSED', analysis: { status: 'COMPLETED' }, recordingUrl: `${suite.api.baseUrl}/v1/chat/sessions/${sessionId}/recording` });
    expect(simulator().twimlOf(callSid)).toMatch(/<Connect action="[^"]+"><Stream url="ws:\/\/127\.0\.0\.1:\d+\/media-stream\/[^"]+"><Parameter name="token" value="[^"]+"\/><\/Stream><\/Connect>/);
    const session = (await suite.api.request('GET', `/api/v1/chat/sessions/${sessionId}`, { key: org.key })).body;
    expect(session).toMatchObject({ endedReason: 'HANGUP_AGENT' });

    const transcript = await messages(org, sessionId);
    expect(transcript.map((message: { role: string }) => message.role)).toEqual(['USER', 'TOOL', 'ASSISTANT', 'USER', 'ASSISTANT', 'USER', 'ASSISTANT']);
    const [asked, tool, answer, pressed, , goodbye, farewell] = transcript;
    // The callee's spoken question, as the worker's recogniser made it out, and the tool call it led to.
    expect(asked).toMatchObject({ metadata: { source: 'voice' } });
    expect(asked.content).toContain('weather');
    expect(tool.toolCall).toMatchObject({ name: 'get_weather', result: forecast, status: 'SUCCESS' });
    expect(answer.content).toBe(`The get_weather tool returned: ${forecast}`);
    expect(pressed).toMatchObject({ content: '[The caller pressed 5]', metadata: { source: 'dtmf', digit: '5' } });
    expect(goodbye.content).toMatch(/\bbye\b/);
    expect(farewell.content).toBe('Goodbye! Thanks for chatting.');

    // What the callee's recogniser heard: every reply (one utterance each, or more when a busy machine paused one), and
    // the call's word error rate (all its replies' words against all it heard) within the built-in engines' bound.
    const replies = [answer, transcript[4], farewell].map((reply: { content: string }) => reply.content);
    const heard = await simulator().heardWhole(callSid);
    expect(heard.length).toBeGreaterThanOrEqual(replies.length);
    const callRate = wordErrorRate(replies.join(' '), heard.join(' '));
    expect(callRate).toBeLessThanOrEqual(heardWerBound);

    // The agent hung up through Twilio's REST API once its goodbye had played: the carrier's own record says so, in
    // one status callback (the <Connect> action may also be told of the stream's end, with the call's status).
    const completed = simulator().callbacks.filter(
      (callback) => callback.params.CallSid === callSid && callback.params.CallbackSource === 'call-progress-events' && callback.params.CallStatus === 'completed',
    );
    expect(completed).toHaveLength(1);
    const recording = await eventually(
      () => suite.api.request('GET', `/v1/chat/sessions/${sessionId}/recording`, { key: org.key }),
      (response) => response.status === 302,
    );
    expect(recording.status, recording.text).toBe(302);
  });

  it('stops speaking when the callee talks over it, and keeps in the transcript only what was played', async () => {
    const org = await workerOrg();
    const to = '+15550107';
    simulator().setScript(to, {
      steps: [{ say: 'Tell me everything about your offers please' }, { say: 'Okay, bye bye.', interruptAfterMs: 5_000 }],
      then: 'stay',
    });
    const { sessionId } = await call(org, to);
    await sessionEvents(receiver, org.webhookPath, sessionId);

    // Cut where the callee spoke: what was played (whole pieces, by Twilio's marks) is kept, the rest recorded apart.
    const interruption = expectEchoCutShort(await messages(org, sessionId));
    expect(interruption.durationUntilInterruptMs).toBeLessThan(10_000);
  });

  it('ends the caller’s turn on the detector’s silence with endOfTurn SILENCE', async () => {
    const org = await workerOrg({ voice: { provider: 'builtin', voiceId: 'en-us', endOfTurn: 'SILENCE', endOfTurnSilenceMs: 700 } });
    const to = '+15550108';
    simulator().setScript(to, { steps: [{ say: 'Tell me the weather please.' }], then: 'hangup' });
    const { sessionId } = await call(org, to);
    await sessionEvents(receiver, org.webhookPath, sessionId);

    const [asked, tool] = await messages(org, sessionId);
    expect(asked).toMatchObject({ role: 'USER', content: expect.stringContaining('weather'), metadata: { source: 'voice' } });
    expect(tool.toolCall).toMatchObject({ name: 'get_weather', result: forecast });
  });
});
