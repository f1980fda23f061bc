/**
 * Twilio Media Streams as Twilio documents them (the fixtures of test/fixtures/twilio/), the TwiML that opens one
 * (against twilio-node's own builder), which path a call takes (decision 437), and where a reply is cut to be spoken.
 */
import twilio from 'twilio';
import { describe, expect, it } from 'vitest';
import { createModelCatalog, builtinModels, modelId } from '../../shared/models/model-catalog.ts';
import { speakableEnd } from '../../shared/voice/media-call.ts';
import { mediaStreamTwiml, parseStreamMessage, streamInbound } from '../../shared/voice/media-streams.ts';
import { callPathOf } from '../../shared/voice/voice.ts';
import { parseConfig } from '../../shared/platform/config.ts';
import streamMessages from '../fixtures/twilio/media-streams-messages.json' with { type: 'json' };

const { fromTwilio } = streamMessages;

describe("Twilio Media Streams' messages", () => {
  it.each(Object.entries(fromTwilio))('reads the documented %s message', (_, message) => {
    expect(streamInbound.safeParse(message).success).toBe(true);
  });

  it('reads the start’s parameters and format, and the media’s counts Twilio sends as strings', () => {
    expect(streamInbound.parse(fromTwilio.start)).toMatchObject({
      start: { streamSid: fromTwilio.start.streamSid, customParameters: { FirstName: 'Jane' }, mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 } },
    });
    expect(streamInbound.parse(fromTwilio.media)).toMatchObject({ media: { chunk: 1, timestamp: 5, track: 'inbound' } });
  });

  it('keeps a message with fields of another type than documented, and drops what is not a message without throwing', () => {
    expect(streamInbound.parse({ ...fromTwilio.media, media: { ...fromTwilio.media.media, chunk: 2, timestamp: 'soon', extra: 1 } })).toMatchObject({
      media: { chunk: 2, timestamp: undefined },
    });
    expect(streamInbound.parse({ ...fromTwilio.dtmf, dtmf: { digit: 7 } })).toMatchObject({ dtmf: { digit: '7' } });
    expect(parseStreamMessage('not json')).toBeUndefined();
    expect(parseStreamMessage(JSON.stringify({ event: 'unknown' }))).toBeUndefined();
  });
});

describe('the TwiML of a call through the media worker', () => {
  it('is what twilio-node builds for <Connect action><Stream url><Parameter/></Stream></Connect>', () => {
    const settings = { url: 'wss://media.example.com/media-stream/org-1/session-1', parameters: { token: 'a&b"c' }, action: 'https://api.example.com/twilio/calls/org-1/session-1/relay-ended' };
    const reference = new twilio.twiml.VoiceResponse();
    reference.connect({ action: settings.action }).stream({ url: settings.url }).parameter({ name: 'token', value: settings.parameters.token });
    expect(mediaStreamTwiml(settings)).toBe(reference.toString());
  });

  it('records first when asked, as a relay call does', () => {
    const twiml = mediaStreamTwiml({ url: 'wss://m/media-stream/o/s', parameters: {}, action: 'https://a/x', recordingStatusCallback: 'https://a/recording' });
    expect(twiml).toContain('<Response><Start><Recording recordingStatusCallback="https://a/recording" recordingStatusCallbackEvent="completed"/></Start><Connect');
  });
});

describe('which path a call takes', () => {
  const catalog = createModelCatalog(parseConfig({ OPENAI_COMPATIBLE_STT_MODELS: 'whisper-1' }));
  const builtinTts = modelId('builtin', 'TTS', builtinModels.tts);
  const builtinStt = modelId('builtin', 'STT', builtinModels.stt);
  const cases: [string, object, 'conversation-relay' | 'media-worker'][] = [
    ['no voice and no speech models', {}, 'conversation-relay'],
    ['a Google voice', { voice: { provider: 'google', voiceId: 'en-US-Journey-O' } }, 'conversation-relay'],
    ['an ElevenLabs voice', { voice: { provider: 'elevenlabs', voiceId: '21m00Tcm4TlvDq8ikWAM' } }, 'conversation-relay'],
    ['a Cartesia voice', { voice: { provider: 'cartesia', voiceId: 'a0e99841-438c-4a64-b679-ae501e7d6091' } }, 'media-worker'],
    ['a Rime voice', { voice: { provider: 'rime', voiceId: 'celeste' } }, 'media-worker'],
    ['a built-in voice', { voice: { provider: 'builtin', voiceId: 'en-us' } }, 'media-worker'],
    ['the built-in TTS model', { ttsModelId: builtinTts }, 'media-worker'],
    ['the built-in STT model', { sttModelId: builtinStt }, 'media-worker'],
    ['an STT model ConversationRelay does not run', { sttModelId: modelId('openai-compatible', 'STT', 'whisper-1') }, 'media-worker'],
    ['an explicit end of turn', { voice: { provider: 'amazon', voiceId: 'Joanna-Neural', endOfTurn: 'STT_ENDPOINTING' } }, 'media-worker'],
    ['a model the catalog does not know', { sttModelId: '00000000-0000-4000-8000-000000000000' }, 'conversation-relay'],
    ['speech-to-speech', { voicePipelineMode: 'sts' }, 'media-worker'],
    ['hybrid, with a voice ConversationRelay speaks', { voicePipelineMode: 'hybrid', voice: { provider: 'google', voiceId: 'en-US-Journey-O' } }, 'media-worker'],
  ];
  it.each(cases)('%s: %s', (_, agent, path) => {
    expect(callPathOf({ voicePipelineMode: 'pipeline', ...agent }, catalog)).toBe(path);
  });
});

describe('where a reply is cut to be spoken', () => {
  it('cuts after a sentence, a long enough clause, or a line, and waits for more otherwise', () => {
    expect(speakableEnd('Hello there. How')).toBe('Hello there. '.length);
    expect(speakableEnd('You said: "Hi". I am')).toBe('You said: "Hi". '.length);
    expect(speakableEnd('Yes, I')).toBe(-1);
    expect(speakableEnd('The weather in Paris is sunny this afternoon, and')).toBe('The weather in Paris is sunny this afternoon, '.length);
    expect(speakableEnd('First line\nSecond')).toBe('First line\n'.length);
    expect(speakableEnd('No end yet')).toBe(-1);
  });
});
