/**
 * Whole calls through Twilio Media Streams whose agent speaks with Cartesia or Rime: the media worker asks the
 * provider's simulator (its documented protocol, speaking with eSpeak NG) for each piece of the reply, in telephone
 * audio, and the simulator's callee hears it with PocketSphinx, as test/voice/media-stream-call.test.ts does with the
 * built-in voice.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { wordErrorRate } from '../../shared/speech/word-error-rate.ts';
import { startApi, type TestApi } from '../support/api.ts';
import { sessionEvents, voiceOrg, type VoiceOrg } from '../support/voice.ts';
import { Receiver } from '../support/webhook-receiver.ts';

const receiver = new Receiver();
let receiverUrl = '';
let api: TestApi;
beforeAll(async () => {
  receiverUrl = await receiver.start();
  api = await startApi({}, { streamPoller: true, queues: true, voice: true, speech: true });
});
afterAll(async () => {
  await api?.close();
  await receiver.close();
});

const simulator = () => api.voice!.simulator;

/** The word error rate, agent to callee, of a call spoken with a provider's simulator (eSpeak NG into PocketSphinx). */
const heardWerBound = 0.9;

describe.each([
  { provider: 'cartesia', voiceId: 'a0e99841-438c-4a64-b679-ae501e7d6091', to: '+15550111' },
  { provider: 'rime', voiceId: 'celeste', to: '+15550112' },
] as const)('a call through the media worker speaking with $provider', ({ provider, voiceId, to }) => {
  it('is heard, answered, spoken with the provider’s audio, and ended once when the agent says goodbye', async () => {
    const org: VoiceOrg = await voiceOrg(api, receiver, receiverUrl, { agent: { voice: { provider, voiceId } } });
    simulator().setScript(to, { steps: [{ say: 'Tell me the weather please.' }, { say: 'Okay, bye bye.' }], then: 'stay' });
    const requestsBefore = api.speech!.started[provider]!.requests.length;

    const started = await api.request('POST', `/api/v1/phone-numbers/${org.phoneNumberId}/calls/start`, { key: org.key, body: { to_phone_number: to, agent_id: org.agentId } });
    expect(started.status, started.text).toBe(201);
    const { sessionId } = started.body;
    const events = await sessionEvents(receiver, org.webhookPath, sessionId);
    expect(events.filter((receipt) => receipt.body.eventType === 'session.ended')).toHaveLength(1);
    const session = (await api.request('GET', `/api/v1/chat/sessions/${sessionId}`, { key: org.key })).body;
    expect(session).toMatchObject({ endedReason: 'HANGUP_AGENT' });

    const transcript = (await api.request('GET', `/api/v1/chat/sessions/${sessionId}/messages?limit=50`, { key: org.key })).body.data;
    expect(transcript.map((message: { role: string }) => message.role)).toEqual(['USER', 'ASSISTANT', 'USER', 'ASSISTANT']);
    const replies = [transcript[1].content, transcript[3].content] as string[];
    expect(replies[1]).toBe('Goodbye! Thanks for chatting.');
    // Each piece of each reply was asked of the provider, with its voice, and answered.
    const asked = api.speech!.started[provider]!.requests.slice(requestsBefore);
    expect(asked.length).toBeGreaterThanOrEqual(replies.length);
    expect(asked.every((request) => request.status === 200)).toBe(true);
    expect(JSON.stringify(asked.map((request) => request.body))).toContain(voiceId);
    // The callee heard the provider's audio: every reply (more utterances when a busy machine paused one), within the
    // engines' word error rate.
    const heard = await simulator().heardWhole(session.metadata.roomName);
    expect(heard.length).toBeGreaterThanOrEqual(replies.length);
    expect(wordErrorRate(replies.join(' '), heard.join(' '))).toBeLessThanOrEqual(heardWerBound);
  });
});
