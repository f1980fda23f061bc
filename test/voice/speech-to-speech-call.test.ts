/**
 * Whole `sts` and `hybrid` calls through Twilio Media Streams on the local runtime, with real audio: the media worker
 * bridges the call to a speech-to-speech session (the OpenAI Realtime and Amazon Nova Sonic simulators, which hear
 * with PocketSphinx, answer with the built-in model and speak with eSpeak NG), and the simulator's callee speaks
 * its lines and hears the agent. The lines are ones the built-in recogniser makes out ("Tell me the weather please."
 * is heard as "the weather leave", "Look it up in the knowledge base." as "look it up in it", "Okay, bye bye." as
 * "okay bye bye"), so that the model's choices are the test's: the weather tool, the knowledge tool, goodbye.
 */
import { createServer } from 'node:http';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { modelId } from '../../shared/models/model-catalog.ts';
import { startApi, type TestApi } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';
import { listenOnLoopback } from '../support/loopback-server.ts';
import { connect, ofType } from '../support/browser-voice.ts';
import { createWeatherTool, expectEchoCutShort, sessionEvents, voiceOrg, type VoiceOrg } from '../support/voice.ts';
import { Receiver } from '../support/webhook-receiver.ts';

const receiver = new Receiver();
let receiverUrl = '';
let api: TestApi;
/** What the weather API answers, in words a recogniser can hear. */
const forecast = 'Sunny and warm all day.';
const weather = createServer((_request, response) => response.writeHead(200, { 'content-type': 'text/plain' }).end(forecast));
let weatherUrl = '';
beforeAll(async () => {
  receiverUrl = await receiver.start();
  weatherUrl = `http://127.0.0.1:${await listenOnLoopback(weather)}/weather`;
  api = await startApi({ KNOWLEDGE_VECTOR_DIR: mkdtempSync(join(tmpdir(), 'vectors-')) }, { streamPoller: true, queues: true, voice: true, speech: true });
});
afterAll(async () => {
  await api?.close();
  await receiver.close();
  await new Promise((resolveClose) => weather.close(resolveClose));
});

const simulator = () => api.voice!.simulator;

const openingHours = `# Opening hours

## Shop
The shop on Main Street is open Tuesday to Saturday, 10:00 to 18:30.`;

/** An agent in `mode` on the speech-to-speech model `stsModelId`, with the weather tool and a knowledge store of one document. */
async function stsOrg(mode: 'sts' | 'hybrid', stsModelId: string, agent: object = {}): Promise<VoiceOrg & { documentId: string }> {
  const org = await voiceOrg(api, receiver, receiverUrl, { agent: { voicePipelineMode: mode, stsModelId, ...agent } });
  const { key } = org;
  // Its city need not be told: the recogniser hears none.
  const toolId = await createWeatherTool(api, key, weatherUrl, {
    description: 'Current weather',
    ajvPropertiesSchema: { type: 'object', properties: { city: { type: 'string' } } },
    preExecutionMessage: 'Let me check.',
  });
  const store = (await api.request('POST', '/v1/chat/knowledge-stores', { key, body: { name: 'Shop facts', config: { topK: 1 } } })).body;
  const document = (await api.request('POST', `/v1/chat/knowledge-stores/${store.id}/documents`, { key, body: { name: 'Opening hours', text: openingHours } })).body;
  await eventually(async () => (await api.request('GET', `/v1/chat/knowledge-stores/${store.id}/documents/${document.id}`, { key })).body.status, (status) => status === 'UPSERTED');
  const patched = await api.request('PATCH', `/v2/chat/agents/${org.agentId}`, { key, body: { tools: [{ toolId }], knowledgeStoreId: store.id } });
  expect(patched.status, patched.text).toBe(200);
  return { ...org, documentId: document.id };
}

const realtimeModelId = modelId('openai-compatible', 'STS', 'gpt-realtime');

/** The welcome of the first case: OpenAI Realtime says a given text (Nova Sonic v1 can only be asked to, decision 497). */
const welcome = 'Hello, this is the weather line.';
const cases = [
  { mode: 'sts', provider: 'OpenAI Realtime', stsModelId: realtimeModelId, to: '+15550121', welcome },
  { mode: 'sts', provider: 'Amazon Nova Sonic', stsModelId: modelId('bedrock', 'STS', 'amazon.nova-sonic-v1:0'), to: '+15550122', welcome: undefined },
  { mode: 'hybrid', provider: 'OpenAI Realtime', stsModelId: realtimeModelId, to: '+15550123', welcome: undefined },
] as const;

describe.each(cases)('an $mode call on $provider', ({ mode, provider, stsModelId, to, welcome }) => {
  it('answers with a tool and from knowledge, runs the tools with our engine, records both sides, and ends once with analysis', async () => {
    const org = await stsOrg(mode, stsModelId, welcome ? { voice: { provider: 'builtin', voiceId: 'en-us', welcomeMessage: welcome } } : {});
    simulator().setScript(to, { steps: [{ say: 'Tell me the weather please.' }, { say: 'Look it up in the knowledge base.' }, { say: 'Okay, bye bye.' }], then: 'stay' });
    const company = `Acme ${to}`;
    const started = await api.request('POST', `/api/v1/phone-numbers/${org.phoneNumberId}/calls/start`, {
      key: org.key,
      body: { to_phone_number: to, agent_id: org.agentId, session_variables: { company } },
    });
    expect(started.status, started.text).toBe(201);
    const { sessionId } = started.body;

    const events = await sessionEvents(receiver, org.webhookPath, sessionId);
    const ended = events.filter((receipt) => receipt.body.eventType === 'session.ended');
    expect(ended).toHaveLength(1);
    expect(ended[0]!.body).toMatchObject({ state: 'CLOSED', analysis: { status: 'COMPLETED' } });
    const session = (await api.request('GET', `/api/v1/chat/sessions/${sessionId}`, { key: org.key })).body;
    expect(session).toMatchObject({ endedReason: 'HANGUP_AGENT' });
    expect(simulator().twimlOf(session.metadata.roomName)).toContain('<Stream url=');

    const transcript = (await api.request('GET', `/api/v1/chat/sessions/${sessionId}/messages?limit=50`, { key: org.key })).body.data;
    expect(transcript.map((message: { role: string }) => message.role)).toEqual(['USER', 'TOOL', 'ASSISTANT', 'USER', 'TOOL', 'ASSISTANT', 'USER', 'ASSISTANT']);
    const [asked, weatherCall, weatherAnswer, lookUp, knowledgeCall, knowledgeAnswer, goodbye, farewell] = transcript;
    // The caller's side as the session transcribed it; the tools run by our engine, as in a pipeline call.
    expect(asked).toMatchObject({ metadata: { source: 'voice' } });
    expect(asked.content).toContain('weather');
    expect(weatherCall.toolCall).toMatchObject({ name: 'get_weather', result: forecast, status: 'SUCCESS' });
    expect(weatherAnswer.content).toContain(forecast);
    // The session speaks for itself: the tool's pre-execution message, never said, is not written either.
    expect(weatherAnswer.content).not.toContain('Let me check.');
    expect(lookUp.content).toMatch(/\blook\b/);
    expect(knowledgeCall.toolCall).toMatchObject({ name: 'search_knowledge', status: 'SUCCESS' });
    expect(knowledgeAnswer.content).toContain('Tuesday to Saturday, 10:00 to 18:30');
    expect(knowledgeAnswer.metadata.citations).toEqual([expect.objectContaining({ documentId: org.documentId, documentName: 'Opening hours' })]);
    expect(goodbye.content).toMatch(/\bbye\b/);
    expect(farewell.content).toBe('Goodbye! Thanks for chatting.');
    // Which model answered each turn, and why: in hybrid the text LLM took the turns that needed a tool.
    const answeredBy = [weatherAnswer, knowledgeAnswer, farewell].map((reply: { metadata: { voice: { answeredBy: string } } }) => reply.metadata.voice.answeredBy);
    expect(answeredBy).toEqual(mode === 'hybrid' ? ['llm', 'llm', 'sts'] : ['sts', 'sts', 'sts']);
    expect(farewell.metadata).toMatchObject({ model: { id: stsModelId }, voice: { mode, stsModelId } });
    // The tokens the provider reported for the session's responses are the replies' usage.
    expect(farewell.metadata.usage.outputTokens).toBeGreaterThan(0);

    // The session was opened with the agent's prompt, its variables filled in, and the tools of its turns.
    if (provider === 'OpenAI Realtime') {
      const opened = api.speech!.started.openaiRealtime!.clientEvents.find(
        (event) => event.type === 'session.update' && JSON.stringify(event).includes(company),
      ) as { session: { instructions: string; tools: { name: string }[] } } | undefined;
      expect(opened?.session.instructions).toContain(`You answer the phone for ${company}.`);
      expect(opened?.session.tools.map((tool) => tool.name)).toEqual(['get_weather', 'end_conversation', 'search_knowledge']);
    }

    // The welcome was asked of the session (spoken by it, not stored); the callee heard the session's own audio: the
    // three replies, as many utterances or more (a busy machine may pause one; a short welcome may be heard as no
    // words at all). Which words: the built-in recogniser hears the tool's name and the opening hours' figures too
    // poorly to compare them (decision 447).
    if (welcome) {
      const asked = api.speech!.started.openaiRealtime!.clientEvents.filter((event) => event.type === 'response.create' && JSON.stringify(event).includes(welcome));
      expect(asked.length).toBeGreaterThanOrEqual(1);
    }
    const heard = await simulator().heardWhole(session.metadata.roomName);
    expect(heard.length).toBeGreaterThanOrEqual([weatherAnswer, knowledgeAnswer, farewell].length);
  });
});

describe('an sts call on OpenAI Realtime, spoken over', () => {
  it('stops the session’s reply where the callee spoke, and keeps in the transcript what was heard of it', async () => {
    const org = await voiceOrg(api, receiver, receiverUrl, { agent: { voicePipelineMode: 'sts', stsModelId: realtimeModelId } });
    const to = '+15550124';
    simulator().setScript(to, { steps: [{ say: 'Tell me everything about your offers please' }, { say: 'Okay, bye bye.', interruptAfterMs: 3_000 }], then: 'stay' });
    const started = await api.request('POST', `/api/v1/phone-numbers/${org.phoneNumberId}/calls/start`, { key: org.key, body: { to_phone_number: to, agent_id: org.agentId } });
    expect(started.status, started.text).toBe(201);
    await sessionEvents(receiver, org.webhookPath, started.body.sessionId);

    const transcript = (await api.request('GET', `/api/v1/chat/sessions/${started.body.sessionId}/messages?limit=50`, { key: org.key })).body.data;
    // What was heard is estimated from the audio played before the callee spoke (a speech-to-speech reply has no pieces).
    expectEchoCutShort(transcript);
    expect(transcript[3].content).toBe('Goodbye! Thanks for chatting.');
  });
});

describe('a voice session from the browser with an sts agent', () => {
  it('hears the user, answers with the session’s audio and transcripts, and ends once with analysis', async () => {
    const org = await stsOrg('sts', realtimeModelId);
    const started = await api.request('POST', '/v1/chat/voice/sessions', { key: org.key, body: { agentId: org.agentId }, headers: { 'idempotency-key': crypto.randomUUID() } });
    expect(started.status, started.text).toBe(201);
    const { sessionId, url, token } = started.body;

    const browser = connect(url);
    browser.send({ type: 'start', token });
    await eventually(() => ofType(browser, 'session.started'), (found) => found.length === 1);
    await browser.say('Tell me the weather please.');
    // What the session made of the words decides the answer (the weather tool, or an echo: the built-in recogniser's
    // hearing of a browser's frames varies from run to run); either is the stored turn, shown and spoken.
    const answered = await eventually(() => ofType(browser, 'agent.transcript').filter((event) => event.final), (found) => found.length === 1);
    await eventually(() => browser.audio.length, (frames) => frames > 0);
    await browser.say('Okay, bye bye.');
    const code = await browser.closed;
    browser.stop();

    expect(code).toBe(1000);
    expect(ofType(browser, 'session.ended')).toEqual([{ type: 'session.ended', reason: 'HANGUP_AGENT' }]);
    const said = ofType(browser, 'user.transcript').find((event) => event.final)?.text as string;
    const events = await sessionEvents(receiver, org.webhookPath, sessionId);
    const ended = events.filter((receipt) => receipt.body.eventType === 'session.ended');
    expect(ended).toHaveLength(1);
    expect(ended[0]!.body).toMatchObject({ state: 'CLOSED', analysis: { status: 'COMPLETED' } });
    const messages = (await api.request('GET', `/api/v1/chat/sessions/${sessionId}/messages?limit=50`, { key: org.key })).body.data as { role: string; content: string }[];
    expect(messages[0]).toMatchObject({ role: 'USER', content: said });
    expect(messages.find((message) => message.role === 'ASSISTANT')?.content).toBe(answered[0]!.text);
    expect(messages.at(-1)).toMatchObject({ role: 'ASSISTANT', content: 'Goodbye! Thanks for chatting.' });
  });
});
