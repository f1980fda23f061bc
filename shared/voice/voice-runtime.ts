import { conversationRuntime, type ConversationRuntime } from '../conversations/conversation-runtime.ts';
import type { CallBackstop, CallSpeech, CampaignCallEnded, RecordingStore, RelayConnections, Telephony, VoiceStore } from './ports.ts';
import { builtinModels } from '../models/model-catalog.ts';
import type { Model } from '../models/model-schemas.ts';
import { voiceCatalog } from '../models/voices.ts';
import { createSpeechProviders } from '../speech/speech-providers.ts';
import { muLawDecode } from '../speech/telephone-audio.ts';
import { VoiceActivityDetector } from '../speech/voice-activity.ts';
import { campaignAttemptSettler, runtime, type Runtime } from '../runtime.ts';
import { secretCipherFromConfig } from '../platform/secrets/secret-cipher.ts';
import { DynamoCallSlots } from './call-slot-store.ts';
import { DynamoVoiceStore } from './voice-store.ts';
import { schedulerBackstop } from './call-backstop.ts';
import { relayConnections } from './relay-connections.ts';
import { s3Recordings } from './s3-recordings.ts';
import { TwilioRestClient } from './twilio-client.ts';

/** The runtime plus telephony: phone numbers, carrier credentials and calls, and the carrier's REST API. */
export interface VoiceRuntime extends Runtime {
  voice: VoiceStore;
  telephony: Telephony;
  recordings: RecordingStore;
  backstop: CallBackstop;
  /** A campaign call's end settles its attempt (docs/campaigns.md#exactly-once). */
  campaignCallEnded: CampaignCallEnded;
  /** The plan's concurrent calls, held one slot per call (docs/voice.md#call-slots). */
  callSlots: DynamoCallSlots;
}

/** What the ConversationRelay function needs besides: turns, and the WebSocket API's connections. */
export interface RelayRuntime extends VoiceRuntime, ConversationRuntime {
  relay: RelayConnections;
}

/** What the media worker needs besides: turns, and the speech of its calls. */
export interface MediaWorkerRuntime extends VoiceRuntime, ConversationRuntime {
  speech: CallSpeech;
}

let processVoiceRuntime: VoiceRuntime | undefined;
let processRelayRuntime: RelayRuntime | undefined;
let processMediaWorkerRuntime: MediaWorkerRuntime | undefined;

const withTelephony = <Base extends Runtime>(base: Base): Base & VoiceRuntime => ({
  ...base,
  voice: new DynamoVoiceStore(base.documentClient, base.config.TABLE_NAME, secretCipherFromConfig(base.config)),
  telephony: new TwilioRestClient(base.config.TWILIO_API_BASE_URL),
  recordings: recordingsFrom(base.config),
  backstop: backstopFrom(base.config),
  campaignCallEnded: campaignAttemptSettler(base),
  callSlots: new DynamoCallSlots(base.documentClient, base.config.TABLE_NAME),
});

function backstopFrom(config: Runtime['config']): CallBackstop {
  const { CALL_BACKSTOP_QUEUE_ARN: queueArn, SCHEDULER_ROLE_ARN: roleArn } = config;
  if (!queueArn || !roleArn) {
    return { schedule: () => Promise.reject(new Error('CALL_BACKSTOP_QUEUE_ARN and SCHEDULER_ROLE_ARN are not set: calls have no backstop.')) };
  }
  return schedulerBackstop({ queueArn, roleArn, region: config.AWS_REGION, endpoint: config.SCHEDULER_ENDPOINT });
}

/** Fails on first use, naming the variable, when no bucket is configured. */
function recordingsFrom(config: Runtime['config']): RecordingStore {
  const bucket = config.RECORDINGS_BUCKET;
  if (!bucket) {
    const missing = () => Promise.reject(new Error('RECORDINGS_BUCKET is not set: call recordings have nowhere to go.'));
    return { put: missing, signedUrl: missing };
  }
  return s3Recordings({ bucket, region: config.AWS_REGION, endpoint: config.S3_ENDPOINT });
}

export function voiceRuntime(): VoiceRuntime {
  processVoiceRuntime ??= withTelephony(runtime());
  return processVoiceRuntime;
}

export function relayRuntime(): RelayRuntime {
  if (!processRelayRuntime) {
    const base = withTelephony(conversationRuntime());
    const endpoint = base.config.VOICE_RELAY_MANAGEMENT_ENDPOINT;
    if (!endpoint) throw new Error('VOICE_RELAY_MANAGEMENT_ENDPOINT is not set: replies cannot reach the calls.');
    processRelayRuntime = { ...base, relay: relayConnections({ endpoint, region: base.config.AWS_REGION }) };
  }
  return processRelayRuntime;
}

export function mediaWorkerRuntime(): MediaWorkerRuntime {
  if (!processMediaWorkerRuntime) {
    const base = withTelephony(conversationRuntime());
    processMediaWorkerRuntime = { ...base, speech: callSpeechFrom(base) };
  }
  return processMediaWorkerRuntime;
}

/**
 * The speech of the media worker's calls, through the providers' registry: the agent's STT model (the built-in one
 * when it names none), and its TTS model, else one of its voice's provider, else the built-in one; the voice is the
 * agent's when it is of that model's provider, else the provider's first of the voices catalog.
 */
function callSpeechFrom(base: Pick<ConversationRuntime, 'config' | 'catalog' | 'providerKeys'>): CallSpeech {
  const providers = createSpeechProviders({ config: base.config, providerKeys: base.providerKeys });
  const { catalog } = base;
  const builtin = (type: 'STT' | 'TTS') => catalog.byName(type, `builtin/${type === 'STT' ? builtinModels.stt : builtinModels.tts}`) as Model;
  return {
    speechToText: async (orgId, agent) => {
      const model = (agent.sttModelId ? catalog.byId(agent.sttModelId) : undefined) ?? builtin('STT');
      return { stt: await providers.speechToText(orgId, model), model: model.name };
    },
    textToSpeech: async (orgId, agent) => {
      const model =
        (agent.ttsModelId ? catalog.byId(agent.ttsModelId) : undefined) ??
        catalog.models.find((candidate) => candidate.type === 'TTS' && candidate.provider === agent.voice?.provider) ??
        builtin('TTS');
      const voiceId = agent.voice?.provider === model.provider ? agent.voice.voiceId : voiceCatalog.find((voice) => voice.provider === model.provider)?.voiceId;
      if (!voiceId) throw new Error(`The voices catalog has no voice of ${model.provider}, the provider of TTS model ${model.name}.`);
      return { tts: await providers.textToSpeech(orgId, model), voiceId, model: model.name };
    },
    speechToSpeech: async (orgId, agent) => {
      const model = (agent.stsModelId ? catalog.byId(agent.stsModelId) : undefined) ?? catalog.models.find((candidate) => candidate.type === 'STS');
      return model ? { sts: await providers.speechToSpeech(orgId, model), model } : undefined;
    },
    voiceActivity: (silenceMs) => {
      const detector = new VoiceActivityDetector({ sampleRate: 8_000, silenceMs });
      return {
        push: (audio) => {
          const last = detector.push(muLawDecode(audio)).at(-1);
          return last === undefined ? undefined : last.type === 'speech-started' ? 'speech-started' : 'silence';
        },
      };
    },
  };
}
