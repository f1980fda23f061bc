import * as z from 'zod';
import { parseJson, sendJson, startSpeechSimulatorServer, streamAudio, type SimulatorEngines, type SpeechSimulator } from './speech-simulator-server.ts';

/**
 * Rime's streaming HTTP TTS, `POST /v1/rime-tts` (https://docs.rime.ai/api-reference/mistv2/http), no more
 * forgiving than Rime: `Authorization: Bearer <key>`, the format chosen by `Accept` (the simulator makes
 * `audio/PCMU` and its deprecated alias `audio/x-mulaw`; the others Rime offers are refused with 406), the body's
 * fields as documented (unknown ones refused), text up to 500 characters, a speaker and model it knows.
 */
const rimeRequest = z.strictObject({
  speaker: z.string().min(1),
  text: z.string().min(1).max(500),
  modelId: z.string().optional(),
  lang: z.string().optional(),
  samplingRate: z.number().int().min(4000).max(44100).optional(),
  speedAlpha: z.number().positive().optional(),
  reduceLatency: z.boolean().optional(),
  pauseBetweenBrackets: z.boolean().optional(),
  phonemizeBetweenBrackets: z.boolean().optional(),
  inlineSpeedAlpha: z.string().optional(),
});
const mulawTypes = ['audio/PCMU', 'audio/x-mulaw'];
const otherTypes = ['audio/mpeg', 'audio/mp3', 'audio/L16', 'audio/pcm'];

export async function startRimeSimulator(options: { engines: SimulatorEngines; apiKey?: string | undefined; models: readonly string[]; voices: readonly string[]; port?: number | undefined }): Promise<SpeechSimulator> {
  const apiKey = options.apiKey ?? 'local-rime-key';
  return startSpeechSimulatorServer({ apiKey, port: options.port }, async ({ request, body, response, record, cancelled }) => {
    const parsed = parseJson(body);
    const refuse = (status: number, message: string) => {
      record(status, parsed);
      sendJson(response, status, { message });
    };
    const url = new URL(request.url ?? '/', 'http://local');
    if (request.method !== 'POST' || url.pathname !== '/v1/rime-tts') return refuse(404, 'Not Found');
    if (request.headers.authorization !== `Bearer ${apiKey}`) return refuse(401, 'Unauthorized: invalid API key');
    const accept = request.headers.accept ?? '';
    if (!mulawTypes.includes(accept)) return refuse(406, otherTypes.includes(accept) ? `The simulator makes ${mulawTypes.join(' or ')} only` : `Unsupported Accept: ${accept}`);
    const checked = rimeRequest.safeParse(parsed);
    if (!checked.success) return refuse(400, checked.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; '));
    const model = checked.data.modelId ?? 'mist';
    if (!options.models.includes(model)) return refuse(400, `Unknown modelId: ${model}`);
    if (!options.voices.includes(checked.data.speaker)) return refuse(400, `Unknown speaker: ${checked.data.speaker}`);
    if ((checked.data.samplingRate ?? 8000) !== 8000) return refuse(400, 'The simulator makes μ-law at 8000 Hz only');
    record(200, parsed);
    const audio = await options.engines.speak(checked.data.text, { provider: 'rime', voiceId: checked.data.speaker, language: checked.data.lang ?? 'eng' });
    await streamAudio(response, audio, 'audio/PCMU', cancelled);
  });
}
