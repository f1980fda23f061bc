/**
 * Phone calls of a MANUAL agent through the Twilio simulator (issue 29): the call binds the version published when
 * it starts, records it as `agentVersion`, and keeps running it when another version is published mid-call. The
 * built-in model calls a tool when asked for it by name: whether the tool is still offered tells which version
 * answers.
 */
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.ts';
import { closeServer } from '../support/loopback-server.ts';
import { sessionEvents, startWeatherApi, uniqueNumber, voiceOrg, voiceTestApi, type VoiceOrg } from '../support/voice.ts';

const suite = voiceTestApi();
const { receiver, simulator } = suite;
let weather: { url: string; server: Server };

beforeAll(async () => {
  weather = await startWeatherApi();
});
afterAll(async () => {
  await closeServer(weather.server);
});

/** A caller on the line, driven by the test: each line said is answered before the next. */
async function callIn(org: VoiceOrg) {
  const from = uniqueNumber();
  let replies = 0;
  let say: ((line: string | null) => void) | undefined;
  simulator().attachCallee(from, { onToken: (_token, last) => void (last && (replies += 1)), onEnd: () => undefined, onConnected: (speak) => (say = speak) });
  const callSid = await simulator().dialIn({ from, to: org.phoneNumber });
  const speak = (await eventually(() => say, Boolean)) as (line: string | null) => void;
  const session = await eventually(
    async () => (await suite.api.request('GET', '/v1/chat/chat/sessions?platform=PHONE', { key: org.key })).body.data.find((found: { metadata: { roomName?: string } }) => found.metadata.roomName === callSid) as { id: string } | undefined,
    (found) => found !== undefined,
  );
  return {
    sessionId: session!.id,
    ask: async (line: string) => {
      const before = replies;
      speak(line);
      await eventually(() => replies, (count) => count > before);
    },
    hangUp: async () => {
      speak(null);
      await sessionEvents(receiver, org.webhookPath, session!.id);
    },
  };
}

const weatherCalls = async (org: VoiceOrg, sessionId: string): Promise<string[]> => {
  const listed = await suite.api.request('GET', `/api/v1/chat/sessions/${sessionId}/messages?limit=50`, { key: org.key });
  expect(listed.status, listed.text).toBe(200);
  return listed.body.data.filter((message: { role: string }) => message.role === 'TOOL').map((message: { toolCall: { arguments: { city: string } } }) => message.toolCall.arguments.city);
};

describe("a MANUAL agent's phone call", () => {
  it('binds the published version, not the draft, and keeps it when another version is published mid-call', async () => {
    // Prepare: version 1 (published) has the weather tool; version 2, a draft, has none.
    const org = await voiceOrg(suite.api, receiver, suite.receiverUrl, { toolUrl: weather.url, agent: { publishMode: 'MANUAL' } });
    const draft = await suite.api.request('PATCH', `/v2/chat/agents/${org.agentId}`, { key: org.key, body: { tools: [] } });
    expect(draft.body).toMatchObject({ draftVersion: 2, publishedVersion: 1 });

    // Act: a call asks for the weather, version 2 is published, and it asks again.
    const call = await callIn(org);
    await call.ask('Please run get_weather with {"city":"Paris"}');
    const published = await suite.api.request('POST', `/v2/chat/agents/${org.agentId}/publish`, { key: org.key, body: {} });
    expect(published.body).toMatchObject({ publishedVersion: 2 });
    await call.ask('Please run get_weather with {"city":"Rome"}');
    await call.hangUp();
    const next = await callIn(org);
    await next.ask('Please run get_weather with {"city":"Oslo"}');
    await next.hangUp();

    // Assess: the first call ran version 1 to its end; the call after the publish runs version 2, without the tool.
    const first = await suite.api.request('GET', `/api/v1/chat/sessions/${call.sessionId}`, { key: org.key });
    expect(first.body).toMatchObject({ type: 'VOICE', platform: 'PHONE', direction: 'INBOUND', agentId: org.agentId, agentVersion: 1 });
    expect(await weatherCalls(org, call.sessionId)).toEqual(['Paris', 'Rome']);
    const second = await suite.api.request('GET', `/api/v1/chat/sessions/${next.sessionId}`, { key: org.key });
    expect(second.body.agentVersion).toBe(2);
    expect(await weatherCalls(org, next.sessionId)).toEqual([]);
  });
});
