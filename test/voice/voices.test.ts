import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { modelRoutes } from '../../functions/models/routes.ts';
import { expectError, startApi, type TestApi } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';
import { numberAtTwilio, twilioAccount } from '../support/voice.ts';

let api: TestApi;

beforeAll(async () => {
  // A deployment with Cartesia's and Rime's TTS models, and none of ElevenLabs' (ConversationRelay speaks its voices).
  api = await startApi({ CARTESIA_TTS_MODELS: 'sonic-2', RIME_TTS_MODELS: 'mistv2', DEEPGRAM_STT_MODELS: 'nova-3' }, { voice: true });
});
afterAll(async () => {
  await api.close();
});

const agentBody = { fullName: 'Vox', description: 'Phone', role: 'Phone agent', voiceEnabled: true, voicePipelineMode: 'pipeline' };

describe('the voices catalog', () => {
  it('lists the voices of every TTS provider this deployment speaks, cartesia, rime and the built-in one among them, filtered by provider and language', async () => {
    const { key } = await api.newOrg(['voice:read']);
    const all = await api.request('GET', '/v1/chat/voices', { key });
    expect(all.status).toBe(200);
    const items = modelRoutes.routes.listVoices.response.parse(all.body).items;
    expect(new Set(items.map((voice) => voice.provider))).toEqual(new Set(['google', 'amazon', 'elevenlabs', 'cartesia', 'rime', 'builtin']));
    const rime = (await api.request('GET', '/v1/chat/voices?provider=rime', { key })).body.items;
    expect(rime.length).toBeGreaterThan(0);
    expect(rime.every((voice: { provider: string }) => voice.provider === 'rime')).toBe(true);
    const english = (await api.request('GET', '/v1/chat/voices?language=en', { key })).body.items as { language: string }[];
    expect(new Set(english.map((voice) => voice.language))).toEqual(new Set(['en-US', 'en-GB']));
    const british = (await api.request('GET', '/v1/chat/voices?language=EN-gb&provider=google', { key })).body.items as { language: string; provider: string }[];
    expect(british.every((voice) => voice.language === 'en-GB' && voice.provider === 'google')).toBe(true);
    expectError(await api.request('GET', '/v1/chat/voices?provider=acme', { key }), 400, 'VALIDATION_ERROR', 'provider');
  });
});

describe("an agent's voice", () => {
  it('is checked against the catalog on create and on PATCH (422 VOICE_NOT_FOUND)', async () => {
    const { key } = await api.newOrg();
    const unknown = await api.request('POST', '/v2/chat/agents', { key, body: { ...agentBody, voice: { provider: 'rime', voiceId: 'Journey-O' } } });
    expectError(unknown, 422, 'VOICE_NOT_FOUND', 'voice.voiceId');
    expectError(await api.request('POST', '/v2/chat/agents', { key, body: { ...agentBody, voice: { provider: 'rime', voiceId: 'celeste', endOfTurn: 'EVENTUALLY' } } }), 400, 'VALIDATION_ERROR');
    const created = await api.request('POST', '/v2/chat/agents', {
      key,
      body: { ...agentBody, voice: { provider: 'rime', voiceId: 'celeste', endOfTurn: 'STT_ENDPOINTING', welcomeMessage: 'Hi, this is Vox.' } },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body.voice).toEqual({ provider: 'rime', voiceId: 'celeste', endOfTurn: 'STT_ENDPOINTING', welcomeMessage: 'Hi, this is Vox.' });
    expectError(await api.request('PATCH', `/v2/chat/agents/${created.body.id}`, { key, body: { voice: { provider: 'google', voiceId: 'celeste' } } }), 422, 'VOICE_NOT_FOUND');
    const cleared = await api.request('PATCH', `/v2/chat/agents/${created.body.id}`, { key, body: { voice: null } });
    expect(cleared.status).toBe(200);
    expect(cleared.body.voice).toBeUndefined();
  });

  it("must be spoken by a TTS model of the voice's provider when the agent names one (422 MODELS_NOT_FOUND), on create and on PATCH", async () => {
    const { key } = await api.newOrg();
    const models = (await api.request('GET', '/v1/chat/models?type=TTS&limit=100', { key })).body.data as { id: string; provider: string; name: string }[];
    const cartesia = models.find((model) => model.provider === 'cartesia' && model.name === 'sonic-2')!;
    const rime = models.find((model) => model.provider === 'rime' && model.name === 'mistv2')!;
    const voice = { provider: 'rime', voiceId: 'celeste' };

    const mismatched = await api.request('POST', '/v2/chat/agents', { key, body: { ...agentBody, voice, ttsModelId: cartesia.id } });
    const matched = await api.request('POST', '/v2/chat/agents', { key, body: { ...agentBody, voice, ttsModelId: rime.id } });
    const patched = await api.request('PATCH', `/v2/chat/agents/${matched.body.id}`, { key, body: { ttsModelId: cartesia.id } });
    const voiceChanged = await api.request('PATCH', `/v2/chat/agents/${matched.body.id}`, { key, body: { voice: { provider: 'cartesia', voiceId: 'a0e99841-438c-4a64-b679-ae501e7d6091' } } });

    expectError(mismatched, 422, 'MODELS_NOT_FOUND', 'ttsModelId');
    expect(matched.status, matched.text).toBe(201);
    expectError(patched, 422, 'MODELS_NOT_FOUND', 'ttsModelId');
    expectError(voiceChanged, 422, 'MODELS_NOT_FOUND', 'ttsModelId');
    expect((await api.request('GET', `/v1/chat/agents/${matched.body.id}`, { key })).body).toMatchObject({ voice, ttsModelId: rime.id });
  });

  it("is what the call's TwiML asks ConversationRelay to speak with, welcome message included", async () => {
    const { key } = await api.newOrg();
    const account = twilioAccount();
    await api.request('PUT', '/v1/chat/telephony/twilio', { key, body: account });
    const agent = await api.request('POST', '/v2/chat/agents', {
      key,
      body: { ...agentBody, language: 'en-GB', voice: { provider: 'elevenlabs', voiceId: '21m00Tcm4TlvDq8ikWAM', welcomeMessage: 'Hello & welcome' } },
    });
    const number = await api.request('POST', '/api/v1/phone-numbers', { key, body: { phone_number: numberAtTwilio(api, account) } });
    const started = await api.request('POST', `/api/v1/phone-numbers/${number.body.id}/calls/start`, { key, body: { to_phone_number: '+15550161', agent_id: agent.body.id } });
    expect(started.status, started.text).toBe(201);
    const session = await eventually(
      async () => (await api.request('GET', `/api/v1/chat/sessions/${started.body.sessionId}`, { key })).body,
      (found: { metadata: { roomName: string } }) => found.metadata.roomName !== '',
    );
    const twiml = api.voice!.simulator.twimlOf(session.metadata.roomName);
    expect(twiml).toContain('ttsProvider="ElevenLabs"');
    expect(twiml).toContain('voice="21m00Tcm4TlvDq8ikWAM"');
    expect(twiml).toContain('welcomeGreeting="Hello &amp; welcome"');
    expect(twiml).toContain('language="en-GB"');
  });
});
