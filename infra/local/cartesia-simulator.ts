import * as z from 'zod';
import { parseJson, sendJson, startSpeechSimulatorServer, streamAudio, type SimulatorEngines, type SpeechSimulator } from './speech-simulator-server.ts';

/**
 * Cartesia's `POST /tts/bytes` (https://docs.cartesia.ai/api-reference/tts/bytes), no more forgiving than
 * Cartesia: the key as `Authorization: Bearer` (or the older `X-API-Key`), a `Cartesia-Version` Cartesia knows,
 * the request body exactly as documented (unknown fields, an unknown model, voice or output format refused), and
 * the transcript spoken by the built-in TTS in the format asked for (raw μ-law or 16-bit PCM at 8 kHz here).
 */
export const cartesiaVersions = ['2024-06-10', '2024-11-13', '2025-04-16', '2026-03-01'] as const;

const ttsRequest = z.strictObject({
  model_id: z.string(),
  transcript: z.string().min(1),
  voice: z.strictObject({ mode: z.literal('id'), id: z.string() }),
  output_format: z.strictObject({
    container: z.enum(['raw', 'wav', 'mp3']),
    encoding: z.enum(['pcm_f32le', 'pcm_s16le', 'pcm_mulaw', 'pcm_alaw']).optional(),
    sample_rate: z.union([z.literal(8000), z.literal(16000), z.literal(22050), z.literal(24000), z.literal(44100), z.literal(48000)]),
    bit_rate: z.number().optional(),
  }),
  language: z.enum(['en', 'fr', 'de', 'es', 'pt', 'zh', 'ja', 'hi', 'it', 'ko', 'nl', 'pl', 'ru', 'sv', 'tr']).optional(),
  duration: z.number().optional(),
  speed: z.enum(['slowest', 'slow', 'normal', 'fast', 'fastest']).optional(),
  save: z.boolean().optional(),
});

export async function startCartesiaSimulator(options: { engines: SimulatorEngines; apiKey?: string | undefined; models: readonly string[]; voices: readonly string[]; port?: number | undefined }): Promise<SpeechSimulator> {
  return startSpeechSimulatorServer({ apiKey: options.apiKey ?? 'local-cartesia-key', port: options.port }, async ({ request, body, response, record, cancelled }) => {
    const parsed = parseJson(body);
    const refuse = (status: number, message: string) => {
      record(status, parsed);
      sendJson(response, status, { error: message });
    };
    const url = new URL(request.url ?? '/', 'http://local');
    if (request.method !== 'POST' || url.pathname !== '/tts/bytes') return refuse(404, 'Not Found');
    const key = request.headers.authorization?.replace(/^Bearer /, '') ?? request.headers['x-api-key'];
    if (key !== (options.apiKey ?? 'local-cartesia-key')) return refuse(401, 'Invalid API key');
    const version = request.headers['cartesia-version'];
    if (!cartesiaVersions.includes(version as (typeof cartesiaVersions)[number])) return refuse(400, `Invalid Cartesia-Version header: ${String(version)}`);
    const checked = ttsRequest.safeParse(parsed);
    if (!checked.success) return refuse(400, checked.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; '));
    const { model_id: model, voice, output_format: format } = checked.data;
    if (!options.models.includes(model)) return refuse(400, `Invalid model_id: ${model}`);
    if (!options.voices.includes(voice.id)) return refuse(404, `Voice not found: ${voice.id}`);
    if (format.container !== 'raw' || format.encoding !== 'pcm_mulaw' || format.sample_rate !== 8000) {
      return refuse(400, 'This simulator makes raw pcm_mulaw at 8000 Hz only');
    }
    record(200, parsed);
    const audio = await options.engines.speak(checked.data.transcript, { provider: 'cartesia', voiceId: voice.id, language: checked.data.language ?? 'en' });
    await streamAudio(response, audio, 'audio/basic', cancelled);
  });
}
