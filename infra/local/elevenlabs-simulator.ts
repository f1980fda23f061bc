import * as z from 'zod';
import { parseJson, sendJson, startSpeechSimulatorServer, streamAudio, type SimulatorEngines, type SpeechSimulator } from './speech-simulator-server.ts';

/**
 * ElevenLabs' `POST /v1/text-to-speech/{voice_id}/stream` (https://elevenlabs.io/docs/api-reference/text-to-speech/stream),
 * no more forgiving than ElevenLabs: the key as `xi-api-key` (401 `invalid_api_key` otherwise), an `output_format`
 * of its list (the simulator makes `ulaw_8000`; the others are refused), the body's fields as documented (422 with
 * ElevenLabs' `detail` list otherwise), a voice it knows (404 `voice_not_found`), a model it knows.
 */
const outputFormats = ['mp3_22050_32', 'mp3_44100_64', 'mp3_44100_128', 'pcm_8000', 'pcm_16000', 'pcm_22050', 'pcm_24000', 'pcm_44100', 'ulaw_8000', 'alaw_8000', 'opus_48000_64'];
const speechRequest = z.strictObject({
  text: z.string().min(1),
  model_id: z.string().optional(),
  language_code: z.string().optional(),
  voice_settings: z.record(z.string(), z.unknown()).optional(),
  seed: z.number().int().optional(),
  previous_text: z.string().optional(),
  next_text: z.string().optional(),
  apply_text_normalization: z.enum(['auto', 'on', 'off']).optional(),
});

export async function startElevenlabsSimulator(options: { engines: SimulatorEngines; apiKey?: string | undefined; models: readonly string[]; voices: readonly string[]; port?: number | undefined }): Promise<SpeechSimulator> {
  const apiKey = options.apiKey ?? 'local-elevenlabs-key';
  return startSpeechSimulatorServer({ apiKey, port: options.port }, async ({ request, body, response, record, cancelled }) => {
    const parsed = parseJson(body);
    const answer = (status: number, detail: unknown) => {
      record(status, parsed);
      sendJson(response, status, { detail });
    };
    const url = new URL(request.url ?? '/', 'http://local');
    const match = /^\/v1\/text-to-speech\/([^/]+)\/stream$/.exec(url.pathname);
    if (request.method !== 'POST' || !match) return answer(404, 'Not Found');
    if (request.headers['xi-api-key'] !== apiKey) return answer(401, { status: 'invalid_api_key', message: 'Invalid API key' });
    const format = url.searchParams.get('output_format') ?? 'mp3_44100_128';
    if (!outputFormats.includes(format)) return answer(422, [{ loc: ['query', 'output_format'], msg: `Invalid output format: ${format}`, type: 'value_error' }]);
    const checked = speechRequest.safeParse(parsed);
    if (!checked.success) return answer(422, checked.error.issues.map((issue) => ({ loc: ['body', ...issue.path], msg: issue.message, type: 'value_error' })));
    const voiceId = decodeURIComponent(match[1]!);
    if (!options.voices.includes(voiceId)) return answer(404, { status: 'voice_not_found', message: `A voice with the voice_id ${voiceId} was not found.` });
    const model = checked.data.model_id ?? 'eleven_multilingual_v2';
    if (!options.models.includes(model)) return answer(400, { status: 'model_not_found', message: `A model with model ID ${model} does not exist.` });
    if (format !== 'ulaw_8000') return answer(400, { status: 'invalid_output_format', message: 'The simulator makes ulaw_8000 only' });
    record(200, parsed);
    const audio = await options.engines.speak(checked.data.text, { provider: 'elevenlabs', voiceId, language: checked.data.language_code ?? 'en' });
    await streamAudio(response, audio, 'audio/basic', cancelled);
  });
}
