import { conversationRuntime, type ConversationRuntime } from '../conversations/conversation-runtime.ts';
import type { CallBackstop, CallSpeech, CampaignCallEnded, RecordingStore, RelayConnections, Telephony, VoiceStore } from './ports.ts';
import { BuiltinSpeechToText } from '../speech/builtin-stt.ts';
import { BuiltinTextToSpeech } from '../speech/builtin-tts.ts';
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
    processMediaWorkerRuntime = { ...base, speech: callSpeechFrom(base.config) };
  }
  return processMediaWorkerRuntime;
}

/** The built-in voice a call speaks with when its agent names no built-in one. */
const defaultBuiltinVoice = 'en-us';

/**
 * The speech of the media worker's calls: the built-in engines (eSpeak NG, PocketSphinx) for every agent, until the
 * providers' registry picks each agent's own (this is the one place it replaces).
 */
function callSpeechFrom(config: Runtime['config']): CallSpeech {
  const stt = new BuiltinSpeechToText(config.SPEECH_ENGINES_DIR);
  const tts = new BuiltinTextToSpeech(config.SPEECH_ENGINES_DIR);
  return {
    speechToText: async () => ({ stt }),
    textToSpeech: async (_orgId, agent) => ({ tts, voiceId: agent.voice?.provider === 'builtin' ? agent.voice.voiceId : defaultBuiltinVoice }),
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
