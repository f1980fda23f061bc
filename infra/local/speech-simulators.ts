import { voiceCatalog, type TtsProvider } from '../../shared/models/voices.ts';
import { startCartesiaSimulator } from './cartesia-simulator.ts';
import { startDeepgramSimulator, type DeepgramSimulator } from './deepgram-simulator.ts';
import { startElevenlabsSimulator } from './elevenlabs-simulator.ts';
import { startNovaSonicSimulator } from './nova-sonic-simulator.ts';
import { startOpenAIRealtimeSimulator, type OpenAIRealtimeSimulator } from './openai-realtime-simulator.ts';
import { denyEgressTo } from './environment.ts';
import { startPollySimulator } from './polly-simulator.ts';
import { startRimeSimulator } from './rime-simulator.ts';
import { startTranscribeSimulator } from './transcribe-simulator.ts';
import type { SimulatorEngines, SpeechSimulator } from './speech-simulator-server.ts';

/**
 * The speech providers' simulators of the local runtime (docs/voice.md#speech-provider-simulators), started before
 * the handlers read their configuration, each one unless its address is preset (`DEEPGRAM_API_URL`,
 * `CARTESIA_API_URL`, `RIME_API_URL`, `ELEVENLABS_API_URL`, `POLLY_ENDPOINT`, `TRANSCRIBE_STREAMING_ENDPOINT`,
 * `OPENAI_COMPATIBLE_REALTIME_URL`, `NOVA_SONIC_ENDPOINT`, among `providerAddressVariables`: a
 * real provider, or another double). A started one sets its address, its key (unless the key is preset, which it
 * then accepts) and the provider's models in the catalog (unless those are preset).
 */

export interface LocalSpeech {
  /** The simulators started, by provider (none for a provider whose address was preset). */
  started: {
    deepgram?: DeepgramSimulator;
    cartesia?: SpeechSimulator;
    rime?: SpeechSimulator;
    elevenlabs?: SpeechSimulator;
    polly?: SpeechSimulator;
    transcribe?: SpeechSimulator;
    openaiRealtime?: OpenAIRealtimeSimulator;
    novaSonic?: SpeechSimulator;
  };
  stop(): Promise<void>;
}

const voicesOf = (provider: TtsProvider) => voiceCatalog.filter((voice) => voice.provider === provider).map((voice) => voice.voiceId);
const listOf = (value: string | undefined, fallback: string) => (value ? value.split(',').map((item) => item.trim()) : [fallback]);

export async function startSpeechSimulators(engines: SimulatorEngines, env: NodeJS.ProcessEnv = process.env): Promise<LocalSpeech> {
  const started: SpeechSimulator[] = [];
  const use = <Simulator extends SpeechSimulator>(simulator: Simulator, urlVariable: string, keyVariable?: string): Simulator => {
    started.push(simulator);
    denyEgressTo(simulator.port, env);
    env[urlVariable] = simulator.url;
    if (keyVariable) env[keyVariable] ??= simulator.apiKey;
    return simulator;
  };
  const models = (variable: string, fallback: string) => {
    env[variable] ??= fallback;
    return listOf(env[variable], fallback);
  };
  try {
    const local: LocalSpeech = { started: {}, stop: () => Promise.all(started.map((simulator) => simulator.stop())).then(() => undefined) };
    if (!env.DEEPGRAM_API_URL) {
      local.started.deepgram = use(await startDeepgramSimulator({ engines, apiKey: env.DEEPGRAM_API_KEY, models: models('DEEPGRAM_STT_MODELS', 'nova-3') }), 'DEEPGRAM_API_URL', 'DEEPGRAM_API_KEY');
    }
    if (!env.CARTESIA_API_URL) {
      local.started.cartesia = use(
        await startCartesiaSimulator({ engines, apiKey: env.CARTESIA_API_KEY, models: models('CARTESIA_TTS_MODELS', 'sonic-2'), voices: voicesOf('cartesia') }),
        'CARTESIA_API_URL',
        'CARTESIA_API_KEY',
      );
    }
    if (!env.RIME_API_URL) {
      local.started.rime = use(await startRimeSimulator({ engines, apiKey: env.RIME_API_KEY, models: models('RIME_TTS_MODELS', 'mistv2'), voices: voicesOf('rime') }), 'RIME_API_URL', 'RIME_API_KEY');
    }
    if (!env.ELEVENLABS_API_URL) {
      local.started.elevenlabs = use(
        await startElevenlabsSimulator({ engines, apiKey: env.ELEVENLABS_API_KEY, models: models('ELEVENLABS_TTS_MODELS', 'eleven_flash_v2_5'), voices: voicesOf('elevenlabs') }),
        'ELEVENLABS_API_URL',
        'ELEVENLABS_API_KEY',
      );
    }
    if (!env.POLLY_ENDPOINT) {
      models('AMAZON_TTS_MODELS', 'polly-neural');
      // Polly's voice ids, as the voices catalog's amazon voices name them (`Joanna-Neural` → `Joanna`).
      local.started.polly = use(await startPollySimulator({ engines, voices: voicesOf('amazon').map((voiceId) => voiceId.split('-')[0]!) }), 'POLLY_ENDPOINT');
    }
    if (!env.TRANSCRIBE_STREAMING_ENDPOINT) {
      models('AMAZON_STT_MODELS', 'transcribe-streaming');
      local.started.transcribe = use(await startTranscribeSimulator({ engines }), 'TRANSCRIBE_STREAMING_ENDPOINT');
    }
    if (!env.OPENAI_COMPATIBLE_REALTIME_URL) {
      const simulator = use(
        await startOpenAIRealtimeSimulator({ engines, apiKey: env.OPENAI_COMPATIBLE_API_KEY, models: models('OPENAI_COMPATIBLE_REALTIME_MODELS', 'gpt-realtime') }),
        'OPENAI_COMPATIBLE_REALTIME_URL',
        'OPENAI_COMPATIBLE_API_KEY',
      );
      // The Realtime API's base address is the API's, as OPENAI_COMPATIBLE_BASE_URL's is (`…/v1`).
      env.OPENAI_COMPATIBLE_REALTIME_URL = `${simulator.url}/v1`;
      local.started.openaiRealtime = simulator;
    }
    if (!env.NOVA_SONIC_ENDPOINT) {
      models('BEDROCK_STS_MODELS', 'amazon.nova-sonic-v1:0');
      local.started.novaSonic = use(await startNovaSonicSimulator({ engines }), 'NOVA_SONIC_ENDPOINT');
    }
    return local;
  } catch (error) {
    await Promise.all(started.map((simulator) => simulator.stop()));
    throw error;
  }
}
