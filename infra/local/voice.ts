import type { Server } from 'node:http';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { WebSocketServer } from 'ws';
import { callBackstopQueue } from '../../functions/consumers.ts';
import { BuiltinSpeechToText } from '../../shared/speech/builtin-stt.ts';
import { BuiltinTextToSpeech } from '../../shared/speech/builtin-tts.ts';
import { voiceRelayRoutes } from '../../functions/voice-relay/routes.ts';
import type { LocalQueues } from './queues.ts';
import { startSchedulerStandIn, type SchedulerStandIn } from './scheduler-stand-in.ts';
import { denyEgressTo } from './environment.ts';
import { freePort } from './free-port.ts';
import { startLocalMediaWorker, type LocalMediaWorker } from './media-worker.ts';
import { phoneChannelPath } from './phone-channel.ts';
import { startTwilioSimulator, type TwilioSimulator } from './twilio-simulator.ts';
import { startWebSocketGateway, type LocalWebSocketGateway } from './websocket-gateway.ts';

const recordingsBucket = 'call-recordings';

export interface LocalVoice {
  /** The Twilio simulator; none when TWILIO_API_BASE_URL named another Twilio before the start. */
  simulator: TwilioSimulator | undefined;
  gateway: LocalWebSocketGateway;
  /** The media worker, in its own process: the calls that do not go through ConversationRelay (docs/voice.md#the-media-worker). */
  mediaWorker: LocalMediaWorker;
  /** With the queues: EventBridge Scheduler's stand-in (call backstops). */
  scheduler?: SchedulerStandIn | undefined;
  stop(): Promise<void>;
}

/**
 * Calls on this machine: the WebSocket API (ConversationRelay's side), the media worker (in a process of its own,
 * started last, with the environment as set here) and the Twilio simulator, wired through the variables the
 * handlers read on AWS too. Call before the handlers read their configuration. `apiBaseUrl` is where the simulator
 * calls back (the API's own address). Tools and webhooks can reach none of them. With the queues, call recordings go
 * to a bucket of the emulator's S3 and backstops to a Scheduler stand-in.
 *
 * Addresses the environment names already win: TWILIO_API_BASE_URL (a real Twilio, or another test double; the
 * simulator then does not start), and PUBLIC_BASE_URL, VOICE_RELAY_URL and MEDIA_WORKER_URL (the tunnels a real
 * Twilio calls back through). The management endpoint is always the local gateway's: it is this runtime's own, not
 * the provider's.
 */
export async function startLocalVoice(
  apiBaseUrl: string,
  env: NodeJS.ProcessEnv = process.env,
  options: {
    simulatorPort?: number | undefined;
    relayPort?: number | undefined;
    mediaWorkerPort?: number | undefined;
    /** The SQS emulator: its S3 keeps recordings, its call-backstop queue gets the Scheduler stand-in's messages. */
    queues?: Pick<LocalQueues, 'endpoint' | 'region' | 'clientConfig' | 'urlOf' | 'arnOf'> | undefined;
  } = {},
): Promise<LocalVoice> {
  // The simulator's callees speak with eSpeak's US voice and hear with the built-in recogniser, on a Media Stream.
  const speech = { tts: new BuiltinTextToSpeech(env.SPEECH_ENGINES_DIR), voiceId: 'en-us', stt: new BuiltinSpeechToText(env.SPEECH_ENGINES_DIR) };
  const simulator = env.TWILIO_API_BASE_URL ? undefined : await startTwilioSimulator({ port: options.simulatorPort, speech });
  const gateway = await startWebSocketGateway(voiceRelayRoutes, { port: options.relayPort });
  if (simulator) {
    denyEgressTo(simulator.port, env);
    env.TWILIO_API_BASE_URL = simulator.baseUrl;
  }
  denyEgressTo(gateway.port, env);
  env.PUBLIC_BASE_URL ??= apiBaseUrl;
  env.VOICE_RELAY_URL ??= gateway.url;
  env.VOICE_RELAY_MANAGEMENT_ENDPOINT = gateway.managementEndpoint;
  const mediaWorkerPort = options.mediaWorkerPort ?? (await freePort());
  denyEgressTo(mediaWorkerPort, env);
  env.MEDIA_WORKER_URL ??= `ws://127.0.0.1:${mediaWorkerPort}/media-stream`;
  let scheduler: SchedulerStandIn | undefined;
  if (options.queues) {
    const { queues } = options;
    env.S3_ENDPOINT = queues.endpoint;
    env.RECORDINGS_BUCKET = recordingsBucket;
    const s3 = new S3Client({ endpoint: queues.endpoint, forcePathStyle: true, region: queues.region, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
    await s3.send(new CreateBucketCommand({ Bucket: recordingsBucket }));
    s3.destroy();
    scheduler = await startSchedulerStandIn(queues);
    denyEgressTo(scheduler.port, env);
    env.SCHEDULER_ENDPOINT = scheduler.endpoint;
    env.CALL_BACKSTOP_QUEUE_ARN = queues.arnOf(callBackstopQueue.name);
    env.SCHEDULER_ROLE_ARN = 'arn:aws:iam::000000000000:role/local-scheduler';
  }
  const mediaWorker = await startLocalMediaWorker(env, { port: mediaWorkerPort });
  return {
    simulator,
    gateway,
    mediaWorker,
    scheduler,
    stop: async () => {
      await scheduler?.stop();
      // The simulator's calls end first: the worker then has none left to finish.
      await simulator?.stop();
      await mediaWorker.stop();
      await gateway.stop();
    },
  };
}

/**
 * Lets the playground, a page of the local API, be a person's phone at the Twilio simulator: WebSocket upgrades of
 * `phoneChannelPath` on the API's own address. A page of another origin is refused (a WebSocket is not bound by
 * CORS, and any site could otherwise place calls through this machine).
 */
export function acceptPhones(server: Server, simulator: TwilioSimulator): void {
  const phones = new WebSocketServer({ noServer: true });
  server.on('upgrade', (request, socket, head) => {
    const url = new URL(request.url ?? '/', 'http://local');
    const number = url.searchParams.get('number');
    const origin = request.headers.origin;
    if (url.pathname !== phoneChannelPath || !number || (origin !== undefined && origin !== `http://${request.headers.host}`)) {
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    phones.handleUpgrade(request, socket, head, (channel) => simulator.connectPhone(channel, number));
  });
}
