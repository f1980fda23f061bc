/**
 * The speech models of the catalog as configured, and what an agent may ask for in a deployment that has none of a
 * provider's TTS models.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { modelId } from '../../shared/models/model-catalog.ts';
import { expectError, startApi, type TestApi } from '../support/api.ts';

let api: TestApi;
beforeAll(async () => {
  // Deepgram's STT and ElevenLabs' and Amazon's TTS, nothing of Cartesia's or Rime's.
  api = await startApi({ DEEPGRAM_STT_MODELS: 'nova-3,nova-2', ELEVENLABS_TTS_MODELS: 'eleven_flash_v2_5', AMAZON_STT_MODELS: 'transcribe-streaming', AMAZON_TTS_MODELS: 'polly-neural', BEDROCK_STS_MODELS: 'amazon.nova-sonic-v1:0' });
});
afterAll(() => api.close());

const agentBody = { fullName: 'Vox', description: 'Phone', role: 'Phone agent', voiceEnabled: true, voicePipelineMode: 'pipeline' };

describe('the speech models of the catalog', () => {
  it('are those configured, by provider and type, with ids that are UUIDv5 of provider/type/name', async () => {
    const { key } = await api.newOrg();

    const stt = (await api.request('GET', '/v1/chat/models?type=STT&limit=100', { key })).body.data as { id: string; provider: string; name: string }[];
    const tts = (await api.request('GET', '/v1/chat/models?type=TTS&limit=100', { key })).body.data as { id: string; provider: string; name: string }[];

    expect(stt.map((model) => `${model.provider}/${model.name}`)).toEqual(['builtin/builtin-stt', 'deepgram/nova-3', 'deepgram/nova-2', 'amazon/transcribe-streaming']);
    expect(tts.map((model) => `${model.provider}/${model.name}`)).toEqual(['builtin/builtin-tts', 'amazon/polly-neural', 'elevenlabs/eleven_flash_v2_5']);
    expect(stt.find((model) => model.provider === 'deepgram' && model.name === 'nova-3')?.id).toBe(modelId('deepgram', 'STT', 'nova-3'));
  });

  it('offer Amazon Nova Sonic as a Bedrock speech-to-speech model when BEDROCK_STS_MODELS names it', async () => {
    const { key } = await api.newOrg();

    const sts = (await api.request('GET', '/v1/chat/models?type=STS&limit=100', { key })).body.data as { id: string; provider: string; name: string; type: string }[];

    expect(sts.filter((model) => model.provider === 'bedrock')).toEqual([
      expect.objectContaining({ id: modelId('bedrock', 'STS', 'amazon.nova-sonic-v1:0'), provider: 'bedrock', name: 'amazon.nova-sonic-v1:0', type: 'STS' }),
    ]);
  });
});

describe('the voices of a provider with no TTS model in this deployment', () => {
  it('are not listed, and an agent asking for one is refused (422 VOICE_NOT_FOUND on voice.provider)', async () => {
    const { key } = await api.newOrg();

    const listed = (await api.request('GET', '/v1/chat/voices', { key })).body.items as { provider: string }[];
    const rime = await api.request('POST', '/v2/chat/agents', { key, body: { ...agentBody, voice: { provider: 'rime', voiceId: 'celeste' } } });
    const google = await api.request('POST', '/v2/chat/agents', { key, body: { ...agentBody, voice: { provider: 'google', voiceId: 'en-US-Journey-O' } } });
    const builtin = await api.request('POST', '/v2/chat/agents', { key, body: { ...agentBody, voice: { provider: 'builtin', voiceId: 'en-us' }, ttsModelId: modelId('builtin', 'TTS', 'builtin-tts') } });
    const patched = await api.request('PATCH', `/v2/chat/agents/${google.body.id}`, { key, body: { voice: { provider: 'cartesia', voiceId: 'a0e99841-438c-4a64-b679-ae501e7d6091' } } });

    expect(new Set(listed.map((voice) => voice.provider))).toEqual(new Set(['google', 'amazon', 'elevenlabs', 'builtin']));
    expectError(rime, 422, 'VOICE_NOT_FOUND', 'voice.provider');
    // ConversationRelay speaks Google's voices itself: they need no TTS model of this deployment.
    expect(google.status, google.text).toBe(201);
    expect(builtin.status, builtin.text).toBe(201);
    expectError(patched, 422, 'VOICE_NOT_FOUND', 'voice.provider');
  });
});
