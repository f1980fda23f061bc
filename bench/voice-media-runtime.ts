/**
 * The media worker for `npm run bench -- voice-media`, in a child process of its own on the database the parent
 * names: the API (for the calls' voice webhook), the Twilio simulator (its numbers only) and the worker, its agent
 * in the voice mode `BENCH_MODE` (`pipeline`, `sts`, `hybrid`), with the built-in engines (`BENCH_SPEECH=builtin`)
 * or speech that takes no time (`scripted`, bench/scripted-speech.ts), so that what is left of a turn's latency is
 * ours. An `sts` or `hybrid` child starts the speech simulators as `npm start` does: the built-in engines of those
 * modes are the OpenAI Realtime simulator's (`gpt-realtime`), and the scripted session stands in for that model of
 * the catalog. The `hybrid` agent has a tool (`get_weather`, answered on loopback at once), so that its turns take
 * the text LLM's path. Tells the parent where to call, then answers `timings` (each `pipeline` turn's split, as the
 * worker saw it, and how many times the tool ran) and `stop`. Its own CPU and memory are the worker's: the parent
 * drives the calls.
 */
import { routeGroups } from '../functions/route-groups.ts';
import { useLocalDatabase } from '../infra/local/environment.ts';
import { freePort } from '../infra/local/free-port.ts';
import { createLocalServer } from '../infra/local/server.ts';
import { builtinSimulatorEngines } from '../infra/local/speech-simulator-server.ts';
import { startSpeechSimulators } from '../infra/local/speech-simulators.ts';
import { startTwilioSimulator } from '../infra/local/twilio-simulator.ts';
import type { voicePipelineModes } from '../shared/agents/agent-schemas.ts';
import { modelId } from '../shared/models/model-catalog.ts';
import { createMediaWorker } from '../shared/voice/media-worker.ts';
import { mediaWorkerRuntime } from '../shared/voice/voice-runtime.ts';
import { benchOrganization } from './bench-api.ts';
import { scriptedCallSpeech, scriptedToolName } from './scripted-speech.ts';
import { startToolServer } from './turns.ts';

export interface MediaBenchReady {
  apiUrl: string;
  workerPid: number;
  accountSid: string;
  authToken: string;
  phoneNumber: string;
}

/** What the worker saw of one `pipeline` turn (ms of its clock): the split of its voice-to-voice latency. */
export interface MediaTurnTiming {
  speechEndedAt: number;
  endOfTurnAt: number;
  finalAt: number;
  firstPieceAt: number;
  firstAudioAt: number;
}

export type VoiceMode = (typeof voicePipelineModes)[number];

/** The child's answer to `timings`: the `pipeline` turns' splits since the last ask, and the tool's runs so far. */
export interface MediaBenchTimings {
  timings: MediaTurnTiming[];
  toolRuns: number;
}

const mode = process.env.BENCH_MODE as VoiceMode;
useLocalDatabase({ endpoint: process.env.BENCH_DYNAMODB_ENDPOINT as string, tableName: process.env.TABLE_NAME as string });
// Before the handlers read their configuration: the simulators set the providers' addresses and catalog models.
if (mode !== 'pipeline') await startSpeechSimulators(builtinSimulatorEngines(process.env.SPEECH_ENGINES_DIR));
const toolServer = await startToolServer();
process.env.LOOPBACK_EGRESS_PORTS = new URL(toolServer.url).port;
const simulator = await startTwilioSimulator();
const workerPort = await freePort();
process.env.TWILIO_API_BASE_URL = simulator.baseUrl;
process.env.MEDIA_WORKER_URL = `ws://127.0.0.1:${workerPort}/media-stream`;
const { server, preload } = createLocalServer(routeGroups);
await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
const apiUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
process.env.PUBLIC_BASE_URL = apiUrl;
await preload();

const deps = mediaWorkerRuntime();
const timings: MediaTurnTiming[] = [];
const worker = createMediaWorker(process.env.BENCH_SPEECH === 'builtin' ? deps : { ...deps, speech: scriptedCallSpeech(deps.speech) }, { turn: (timing) => timings.push(timing) });
await new Promise<void>((listening) => worker.server.listen(workerPort, '127.0.0.1', listening));

const { call } = await benchOrganization(deps, apiUrl);
const account = { accountSid: `AC${'1'.repeat(32)}`, authToken: 'e'.repeat(32) };
await call('PUT', '/v1/chat/telephony/twilio', account);
const tools =
  mode === 'hybrid'
    ? [{ toolId: (await call('POST', '/v1/chat/tools', { name: scriptedToolName, description: 'Current weather', type: 'API_TOOL', ajvPropertiesSchema: { type: 'object', properties: { city: { type: 'string' } } }, apiTool: { url: toolServer.url, method: 'GET' } })).id }]
    : [];
const agent = await call('POST', '/v2/chat/agents', {
  fullName: 'Bench',
  description: 'Bench',
  role: 'Bench',
  voiceEnabled: true,
  voicePipelineMode: mode,
  voice: { provider: 'builtin', voiceId: 'en-us' },
  tools,
  ...(mode === 'pipeline' ? {} : { stsModelId: modelId('openai-compatible', 'STS', 'gpt-realtime') }),
});
const phoneNumber = '+14155550100';
simulator.addIncomingNumber({ ...account, phoneNumber });
await call('POST', '/api/v1/phone-numbers', { phone_number: phoneNumber, agentId: agent.id });

process.on('message', (message: string) => {
  if (message === 'timings') process.send?.({ timings: timings.splice(0), toolRuns: toolServer.handled.length } satisfies MediaBenchTimings);
  else if (message === 'stop') process.exit(0);
});
process.send?.({ ready: { apiUrl, workerPid: process.pid, ...account, phoneNumber } satisfies MediaBenchReady });
