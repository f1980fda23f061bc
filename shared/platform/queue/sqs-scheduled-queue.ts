import type { SQSClient } from '@aws-sdk/client-sqs';
import type { Config } from '../config.ts';
import type { ScheduledQueue } from '../ports.ts';
import { createSqsClient, sendQueueMessages } from './sqs-sender.ts';

/** SQS delays a message by at most 15 minutes; a message due later hops through the queue until it is due. */
export const maxQueueDelaySeconds = 900;

/**
 * The queue at the URL in `variable` of the configuration; without it, a queue whose every send fails, saying
 * what is missing (a deployment or test without that queue).
 */
export function scheduledQueueFrom<Message extends { notBefore: number }>(
  config: Config,
  variable: 'WEBHOOK_QUEUE_URL' | 'ANALYSIS_QUEUE_URL' | 'USAGE_ROLLUP_QUEUE_URL' | 'REPLAY_QUEUE_URL',
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
    const messages = requests.map((request) => ({ body: request, delaySeconds: queueDelaySeconds(request.notBefore, this.now()) }));
    await sendQueueMessages(this.client, this.queueUrl, messages, 'scheduled');
  }
}
