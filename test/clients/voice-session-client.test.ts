/**
 * The typed client's voice session against the local runtime: `voiceSession()` starts one and connects, the
 * microphone's PCM goes out with `sendAudio`, and the agent's audio and transcripts come back to the handlers.
 */
import { describe, expect, it } from 'vitest';
import { ApiError, createApiClient, type VoiceSessionEvent } from '../../clients/typescript/index.ts';
import { eventually } from '../support/eventually.ts';
import { browserSpeech, heardFromBrowser } from '../support/speech.ts';
import { voiceOrg, voiceTestApi } from '../support/voice.ts';

const suite = voiceTestApi();

describe('the typed client’s voice session', () => {
  it('speaks, hears the agent’s audio and both transcripts, and ends when the agent says goodbye', async () => {
    const org = await voiceOrg(suite.api, suite.receiver, suite.receiverUrl, { agent: { voice: { provider: 'builtin', voiceId: 'en-us' } } });
    const client = createApiClient({ baseUrl: suite.api.baseUrl, apiKey: org.key });
    const events: VoiceSessionEvent[] = [];
    const audio: Int16Array[] = [];
    const session = await client.voiceSession({ agentId: org.agentId }, { onEvent: (event) => events.push(event), onAudio: (samples) => audio.push(samples) });

    // The microphone: the utterance in 20 ms frames in real time, then silence, as a line never stops sending.
    const speech = await browserSpeech('Okay, bye bye.');
    let sent = 0;
    const microphone = setInterval(() => {
      session.sendAudio(sent < speech.length ? speech.subarray(sent, sent + 320) : new Int16Array(320));
      sent += 320;
    }, 20);
    const reason = await session.ended;
    clearInterval(microphone);

    expect(reason).toBe('HANGUP_AGENT');
    const finals = (speaker: string) => events.flatMap((event) => (event.type === `${speaker}.transcript` && 'final' in event && event.final ? [event.text] : []));
    expect(finals('user').join(' ')).toMatch(/\bbye\b/);
    expect(finals('agent')).toEqual(['Goodbye! Thanks for chatting.']);
    // The farewell was speech: the recogniser made words of it (a reply this short is heard too unevenly to bound its
    // word error rate, decision 471).
    expect(await heardFromBrowser(Int16Array.from(audio.flatMap((samples) => [...samples])))).toMatch(/\w+/);
    const stored = await eventually(
      () => suite.api.request('GET', `/api/v1/chat/sessions/${session.sessionId}`, { key: org.key }),
      (found) => found.body.state === 'CLOSED',
    );
    expect(stored.body).toMatchObject({ platform: 'WEB', endedReason: 'HANGUP_AGENT' });
  }, 60_000);

  it('throws the API’s error when the agent cannot talk', async () => {
    const org = await voiceOrg(suite.api, suite.receiver, suite.receiverUrl, { agent: { voiceEnabled: false } });
    const client = createApiClient({ baseUrl: suite.api.baseUrl, apiKey: org.key });
    const refused = await client.voiceSession({ agentId: org.agentId }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused).toMatchObject({ status: 422, code: 'AGENT_NOT_VOICE_ENABLED' });
  });
});
