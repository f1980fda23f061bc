import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { voiceRelayRoutes } from '../../functions/voice-relay/routes.ts';
import { denyEgressTo } from './environment.ts';
import { startTwilioSimulator, type TwilioSimulator } from './twilio-simulator.ts';
import { startWebSocketGateway, type LocalWebSocketGateway } from './websocket-gateway.ts';

const recordingsBucket = 'call-recordings';

export interface LocalVoice {
  simulator: TwilioSimulator;
  gateway: LocalWebSocketGateway;
  stop(): Promise<void>;
}

/**
 * Calls on this machine: the WebSocket API (ConversationRelay's side) and the Twilio simulator, wired through the
 * variables the handlers read on AWS too. Call before the handlers read their configuration. `apiBaseUrl` is where
 * the simulator calls back (the API's own address). Tools and webhooks can reach neither. With `s3Endpoint`, call
 * recordings go to a bucket there.
 */
export async function startLocalVoice(
  apiBaseUrl: string,
  env: NodeJS.ProcessEnv = process.env,
  options: { simulatorPort?: number | undefined; relayPort?: number | undefined; /** fauxqs, which also speaks S3 */ s3Endpoint?: string | undefined } = {},
): Promise<LocalVoice> {
  const simulator = await startTwilioSimulator({ port: options.simulatorPort });
  const gateway = await startWebSocketGateway(voiceRelayRoutes, { port: options.relayPort });
  denyEgressTo(simulator.port, env);
  denyEgressTo(gateway.port, env);
  env.TWILIO_API_BASE_URL = simulator.baseUrl;
  env.PUBLIC_BASE_URL = apiBaseUrl;
  env.VOICE_RELAY_URL = gateway.url;
  env.VOICE_RELAY_MANAGEMENT_ENDPOINT = gateway.managementEndpoint;
  if (options.s3Endpoint) {
    env.S3_ENDPOINT = options.s3Endpoint;
    env.RECORDINGS_BUCKET = recordingsBucket;
    const s3 = new S3Client({ endpoint: options.s3Endpoint, forcePathStyle: true, region: env.AWS_REGION ?? 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
    await s3.send(new CreateBucketCommand({ Bucket: recordingsBucket }));
    s3.destroy();
  }
  return {
    simulator,
    gateway,
    stop: async () => {
      await simulator.stop();
      await gateway.stop();
    },
  };
}
