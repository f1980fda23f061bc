import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import type { DispatchDeps, DispatchMessage } from './domain/campaign-dispatcher.ts';
import { createSqsClient } from './queue/sqs-scheduled-queue.ts';
import type { Runtime } from './runtime.ts';
import { voiceRuntime, type VoiceRuntime } from './voice-runtime.ts';

/** The voice runtime plus the campaign dispatch queue: campaign routes and the dispatcher. */
export type CampaignRuntime = VoiceRuntime & DispatchDeps;

let processCampaignRuntime: CampaignRuntime | undefined;

/** The dispatch queue at CAMPAIGN_QUEUE_URL; without it every send fails, naming the variable. */
function dispatchQueueFrom(config: Runtime['config']): DispatchDeps['dispatchQueue'] {
  const queueUrl = config.CAMPAIGN_QUEUE_URL;
  if (!queueUrl) return { send: () => Promise.reject(new Error('CAMPAIGN_QUEUE_URL is not set: campaigns cannot be dispatched.')) };
  const client = createSqsClient(config);
  return {
    async send(messages: readonly DispatchMessage[]) {
      for (let start = 0; start < messages.length; start += 10) {
        const batch = messages.slice(start, start + 10);
        const result = await client.send(
          new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: batch.map((message, index) => ({ Id: String(index), MessageBody: JSON.stringify(message) })) }),
        );
        if (result.Failed?.length) throw new Error(`SQS refused ${result.Failed.length} dispatch message(s)`);
      }
    },
  };
}

export function campaignRuntime(): CampaignRuntime {
  if (!processCampaignRuntime) {
    const base = voiceRuntime();
    processCampaignRuntime = { ...base, dispatchQueue: dispatchQueueFrom(base.config) };
  }
  return processCampaignRuntime;
}
