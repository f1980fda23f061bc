/**
 * The media worker (docs/voice.md#the-media-worker, decision 438): Twilio Media Streams' WebSocket server and
 * `/health`, with the same turn engine and stores as the functions. What the container image runs
 * (services/media-worker/Dockerfile) on ECS Fargate, and a process of its own under `npm start`
 * (infra/local/media-worker.ts). Listens on PORT (8080) at HOST (all interfaces).
 */
import { createMediaWorker } from '../../shared/voice/media-worker.ts';
import { mediaWorkerRuntime } from '../../shared/voice/voice-runtime.ts';
import { reportActiveCalls } from './active-calls.ts';
import { ecsTaskProtection } from './ecs-task-protection.ts';

const port = Number(process.env.PORT ?? 8080);
const host = process.env.HOST ?? '0.0.0.0';

const worker = createMediaWorker(mediaWorkerRuntime());
// The task is protected from scale-in while it carries calls, and reports them as ActiveCalls.
const activeCalls = reportActiveCalls({ activeCalls: worker.activeCalls, protection: ecsTaskProtection({ agentUri: process.env.ECS_AGENT_URI }) });
worker.onActiveCallsChange(() => void activeCalls.callsChanged());

worker.server.listen(port, host, () => console.log(`Media worker listening on ${host}:${port}`));

// ECS sends SIGTERM before it stops a task (scale-in, a deployment): no new stream, and the process ends once its
// calls have.
let stopping = false;
async function stop(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  console.log(`${signal}: draining ${worker.activeCalls()} active calls`);
  await worker.drain();
  activeCalls.stop();
  await worker.close();
  process.exit(0);
}
process.on('SIGTERM', () => void stop('SIGTERM'));
process.on('SIGINT', () => void stop('SIGINT'));
// Started by the local runtime (infra/local/media-worker.ts), it has a channel to it, and goes when it goes. On AWS
// there is none.
process.channel?.unref();
process.on('disconnect', () => void stop('parent gone'));
