import * as z from 'zod';
import { muLawDecode, pcm16ToBytes } from '../../shared/speech/telephone-audio.ts';
import { parseJson, sendJson, startSpeechSimulatorServer, streamAudio, type SimulatorEngines, type SpeechSimulator } from './speech-simulator-server.ts';

/**
 * Amazon Polly's SynthesizeSpeech, `POST /v1/speech` (https://docs.aws.amazon.com/polly/latest/dg/API_SynthesizeSpeech.html),
 * over HTTP/2 as the SDK sends it (cleartext locally): a SigV4 `Authorization` for the `polly` service (its signature is not checked: the local
 * credentials sign), the documented body (unknown fields refused), a voice it knows, `pcm` at 8000 or 16000 Hz
 * (the simulator makes 8000 only); errors as AWS answers them (`x-amzn-ErrorType`, `{message}`).
 */
const synthesizeRequest = z.strictObject({
  Engine: z.enum(['standard', 'neural', 'long-form', 'generative']).optional(),
  LanguageCode: z.string().optional(),
  LexiconNames: z.array(z.string()).optional(),
  OutputFormat: z.enum(['json', 'mp3', 'ogg_vorbis', 'ogg_opus', 'pcm', 'mu-law', 'a-law']),
  SampleRate: z.string().optional(),
  SpeechMarkTypes: z.array(z.string()).optional(),
  Text: z.string().min(1).max(3000),
  TextType: z.enum(['text', 'ssml']).optional(),
  VoiceId: z.string(),
});

export async function startPollySimulator(options: { engines: SimulatorEngines; voices: readonly string[]; port?: number | undefined }): Promise<SpeechSimulator> {
  return startSpeechSimulatorServer({ apiKey: 'local AWS credentials', port: options.port, http2: true }, async ({ request, body, response, record, cancelled }) => {
    const parsed = parseJson(body);
    const refuse = (status: number, type: string, message: string) => {
      record(status, parsed);
      sendJson(response, status, { message }, { 'x-amzn-errortype': type });
    };
    if (request.method !== 'POST' || request.url !== '/v1/speech') return refuse(404, 'UnknownOperationException', 'Unknown operation');
    if (!/^AWS4-HMAC-SHA256 Credential=[^/]+\/\d{8}\/[a-z0-9-]+\/polly\/aws4_request, SignedHeaders=[^,]+, Signature=[0-9a-f]{64}$/.test(request.headers.authorization ?? '')) {
      return refuse(403, 'MissingAuthenticationTokenException', 'Missing Authentication Token');
    }
    const checked = synthesizeRequest.safeParse(parsed);
    if (!checked.success) return refuse(400, 'ValidationException', checked.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; '));
    const input = checked.data;
    if (!options.voices.includes(input.VoiceId)) return refuse(400, 'ValidationException', `1 validation error detected: Value '${input.VoiceId}' at 'voiceId' failed to satisfy constraint`);
    if (input.OutputFormat === 'pcm' && input.SampleRate && !['8000', '16000'].includes(input.SampleRate)) {
      return refuse(400, 'InvalidSampleRateException', `The sample rate ${input.SampleRate} is not valid for pcm`);
    }
    if (input.OutputFormat !== 'pcm' || input.SampleRate !== '8000') return refuse(400, 'InvalidSampleRateException', 'The simulator makes pcm at 8000 Hz only');
    record(200, parsed);
    const audio = await options.engines.speak(input.Text, { provider: 'amazon', voiceId: input.VoiceId, language: input.LanguageCode ?? 'en-US' });
    response.setHeader('x-amzn-requestcharacters', String(input.Text.length));
    await streamAudio(response, pcm16ToBytes(muLawDecode(audio)), 'audio/pcm', cancelled);
  });
}
