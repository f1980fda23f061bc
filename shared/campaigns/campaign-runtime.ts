import type { DispatchDeps, DispatchMessage } from './campaign-dispatcher.ts';
import { DynamoCampaignStore } from './campaign-store.ts';
import { createSqsClient, sendQueueMessages } from '../platform/queue/sqs-sender.ts';
import type { Runtime } from '../runtime.ts';
import { voiceRuntime, type VoiceRuntime } from '../voice/voice-runtime.ts';

/** The voice runtime plus the campaigns and their dispatch queue: campaign routes and the dispatcher. */
export type CampaignRuntime = VoiceRuntime & DispatchDeps;

let processCampaignRuntime: CampaignRuntime | undefined;

/** The dispatch queue at CAMPAIGN_QUEUE_URL; without it every send fails, naming the variable. */
function dispatchQueueFrom(config: Runtime['config']): DispatchDeps['dispatchQueue'] {
  const queueUrl = config.CAMPAIGN_QUEUE_URL;
  if (!queueUrl) return { send: () => Promise.reject(new Error('CAMPAIGN_QUEUE_URL is not set: campaigns cannot be dispatched.')) };
  const client = createSqsClient(config);
  return {
    async send(messages: readonly DispatchMessage[]) {
      await sendQueueMessages(client, queueUrl, messages.map((message) => ({ body: message })), 'campaign dispatch');
    },
  };
}

export function campaignRuntime(): CampaignRuntime {
  if (!processCampaignRuntime) {
    const base = voiceRuntime();
    processCampaignRuntime = { ...base, campaigns: new DynamoCampaignStore(base.documentClient, base.config.TABLE_NAME), dispatchQueue: dispatchQueueFrom(base.config) };
  }
  return processCampaignRuntime;
}
