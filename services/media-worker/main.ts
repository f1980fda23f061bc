/**
 * The media worker (docs/voice.md#the-media-worker, decision 438): Twilio Media Streams' WebSocket server, with the
 * same turn engine and stores as the functions. An ECS Fargate task behind the load balancer on AWS; a process of
 * its own under `npm start` (infra/local/media-worker.ts). Listens on PORT (8080) at HOST (all interfaces).
 */
import { createMediaWorker } from '../../shared/voice/media-worker.ts';
import { mediaWorkerRuntime } from '../../shared/voice/voice-runtime.ts';

const port = Number(process.env.PORT ?? 8080);
const host = process.env.HOST ?? '0.0.0.0';

export const worker = createMediaWorker(mediaWorkerRuntime());

worker.server.listen(port, host, () => console.log(`Media worker listening on ${host}:${port}`));

// A task being stopped (scale-in, a deployment) takes no new stream and ends once its calls have.
let stopping = false;
async function stop(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  console.log(`${signal}: draining ${worker.activeCalls()} active calls`);
  await worker.drain();
  await worker.close();
  process.exit(0);
}
process.on('SIGTERM', () => void stop('SIGTERM'));
process.on('SIGINT', () => void stop('SIGINT'));
