/**
 * The media worker for `npm run bench -- voice-media`, in a child process of its own on the database the parent
 * names: the API (for the calls' voice webhook), the Twilio simulator (its numbers only) and the worker, with the
 * built-in engines (`BENCH_SPEECH=builtin`) or speech that takes no time (`scripted`: the recogniser's final the
 * moment an all-zero frame arrives, a synthesis's audio at once, 60 ms of audio a character as eSpeak speaks), so
 * that what is left of a turn's latency is ours. Tells the parent where to call, then answers `timings` (each turn's
 * split, as the worker saw it) and `stop`. Its own CPU and memory are the worker's: the parent drives the calls.
 */
import { routeGroups } from '../functions/route-groups.ts';
import { useLocalDatabase } from '../infra/local/environment.ts';
import { freePort } from '../infra/local/free-port.ts';
import { createLocalServer } from '../infra/local/server.ts';
import { startTwilioSimulator } from '../infra/local/twilio-simulator.ts';
import type { SpeechToText, TranscriptEvent } from '../shared/speech/ports.ts';
import { createMediaWorker } from '../shared/voice/media-worker.ts';
import type { CallSpeech } from '../shared/voice/ports.ts';
import { mediaWorkerRuntime } from '../shared/voice/voice-runtime.ts';
import { benchOrganization } from './bench-api.ts';

export interface MediaBenchReady {
  apiUrl: string;
  workerPid: number;
  accountSid: string;
  authToken: string;
  phoneNumber: string;
}

/** What the worker saw of one turn (ms of its clock): the split of `npm run bench`'s voice-to-voice latency. */
export interface MediaTurnTiming {
  speechEndedAt: number;
  endOfTurnAt: number;
  finalAt: number;
  firstPieceAt: number;
  firstAudioAt: number;
}

/** The words the scripted recogniser hears at each end of utterance. */
export const scriptedUtterance = 'What is the weather like today';
/** The scripted synthesis: 60 ms of audio a character, about eSpeak's pace. */
const scriptedBytesPerChar = 480;

const scriptedStt: SpeechToText = {
  provider: 'scripted',
  open: () => {
    const queue: TranscriptEvent[] = [];
    let wake: (() => void) | undefined;
    let ended = false;
    return {
      write: (audio) => {
        if (audio.length === 0 || audio.some((byte) => byte !== 0)) return;
        queue.push({ type: 'final', text: scriptedUtterance, endOfTurn: true, startMs: 0, endMs: 0 });
        wake?.();
      },
      finalize: () => undefined,
      end: () => {
        ended = true;
        wake?.();
      },
      close: () => {
        ended = true;
        wake?.();
      },
      events: {
        async *[Symbol.asyncIterator]() {
          for (;;) {
            const next = queue.shift();
            if (next) yield next;
            else if (ended) return;
            else await new Promise<void>((resolveNext) => (wake = resolveNext));
          }
        },
      },
    };
  },
};

const scripted: CallSpeech = {
  speechToText: async () => ({ stt: scriptedStt }),
  textToSpeech: async () => ({
    tts: {
      provider: 'scripted',
      synthesize: async function* (text) {
        yield Buffer.alloc(text.length * scriptedBytesPerChar, 0x55);
      },
    },
    voiceId: 'scripted',
  }),
  voiceActivity: () => ({ push: () => undefined }),
  speechToSpeech: async () => undefined,
};

useLocalDatabase({ endpoint: process.env.BENCH_DYNAMODB_ENDPOINT as string, tableName: process.env.TABLE_NAME as string });
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
const worker = createMediaWorker(process.env.BENCH_SPEECH === 'builtin' ? deps : { ...deps, speech: scripted }, { turn: (timing) => timings.push(timing) });
await new Promise<void>((listening) => worker.server.listen(workerPort, '127.0.0.1', listening));

const { call } = await benchOrganization(deps, apiUrl);
const account = { accountSid: `AC${'1'.repeat(32)}`, authToken: 'e'.repeat(32) };
await call('PUT', '/v1/chat/telephony/twilio', account);
const agent = await call('POST', '/v2/chat/agents', { fullName: 'Bench', description: 'Bench', role: 'Bench', voiceEnabled: true, voicePipelineMode: 'pipeline', voice: { provider: 'builtin', voiceId: 'en-us' } });
const phoneNumber = '+14155550100';
simulator.addIncomingNumber({ ...account, phoneNumber });
await call('POST', '/api/v1/phone-numbers', { phone_number: phoneNumber, agentId: agent.id });

process.on('message', (message: string) => {
  if (message === 'timings') process.send?.({ timings: timings.splice(0) });
  else if (message === 'stop') process.exit(0);
});
process.send?.({ ready: { apiUrl, workerPid: process.pid, ...account, phoneNumber } satisfies MediaBenchReady });
