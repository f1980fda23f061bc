import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { Config } from '../config.ts';
import type { ScheduledQueue } from '../ports.ts';

/** SQS delays a message by at most 15 minutes; a message due later hops through the queue until it is due. */
export const maxQueueDelaySeconds = 900;
const maxEntriesPerBatch = 10;

export function createSqsClient(config: Pick<Config, 'AWS_REGION' | 'SQS_ENDPOINT'>): SQSClient {
  return new SQSClient({
    region: config.AWS_REGION,
    requestHandler: { httpAgent: new HttpAgent({ keepAlive: true }), httpsAgent: new HttpsAgent({ keepAlive: true }) },
    ...(config.SQS_ENDPOINT ? { endpoint: config.SQS_ENDPOINT, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
  });
}

/**
 * The queue at the URL in `variable` of the configuration; without it, a queue whose every send fails, saying
 * what is missing (a deployment or test without that queue).
 */
export function scheduledQueueFrom<Message extends { notBefore: number }>(
  config: Config,
  variable: 'WEBHOOK_QUEUE_URL' | 'ANALYSIS_QUEUE_URL' | 'USAGE_ROLLUP_QUEUE_URL',
): ScheduledQueue<Message> {
  const queueUrl = config[variable];
  if (queueUrl) return new SqsScheduledQueue<Message>(createSqsClient(config), queueUrl);
  return {
    schedule: async () => {
      throw new Error(`${variable} is not set: this deployment has no such queue`);
    },
  };
}

/** Seconds to delay a message so that it arrives when `notBefore` (epoch ms) is due, or as near as SQS allows. */
export function queueDelaySeconds(notBefore: number, nowMs: number): number {
  return Math.min(maxQueueDelaySeconds, Math.max(0, Math.ceil((notBefore - nowMs) / 1000)));
}

/**
 * A queue on SQS whose messages wait until they are due: each is sent as JSON, delayed until its `notBefore` (or
 * for the 15 minutes SQS allows). The webhook delivery queue's attempts and the analysis queue's jobs.
 */
export class SqsScheduledQueue<Message extends { notBefore: number }> implements ScheduledQueue<Message> {
  private readonly client: SQSClient;
  private readonly queueUrl: string;
  private readonly now: () => number;

  constructor(client: SQSClient, queueUrl: string, now: () => number = Date.now) {
    this.client = client;
    this.queueUrl = queueUrl;
    this.now = now;
  }

  async schedule(requests: readonly Message[]): Promise<void> {
    for (let start = 0; start < requests.length; start += maxEntriesPerBatch) {
      const batch = requests.slice(start, start + maxEntriesPerBatch);
      const result = await this.client.send(
        new SendMessageBatchCommand({
          QueueUrl: this.queueUrl,
          Entries: batch.map((request, index) => ({
            Id: String(index),
            MessageBody: JSON.stringify(request),
            DelaySeconds: queueDelaySeconds(request.notBefore, this.now()),
          })),
        }),
      );
      if (result.Failed?.length) {
        const reasons = result.Failed.map((failure) => `${failure.Code}: ${failure.Message}`).join('; ');
        throw new Error(`SQS refused ${result.Failed.length} message(s): ${reasons}`);
      }
    }
  }
}
