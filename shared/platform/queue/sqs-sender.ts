import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { Config } from '../config.ts';
import { accountSqsRequests } from '../cost-accounting.ts';
import { logger } from '../logger.ts';
import { emfMetrics, queueRefusalsMetric } from '../metrics.ts';
import { traceAwsClient } from '../tracing.ts';
import { queueMessageBody } from './queue-message.ts';

const maxEntriesPerBatch = 10;

export function createSqsClient(config: Pick<Config, 'AWS_REGION' | 'SQS_ENDPOINT'>): SQSClient {
  const client = traceAwsClient(
    new SQSClient({
      region: config.AWS_REGION,
      requestHandler: { httpAgent: new HttpAgent({ keepAlive: true }), httpsAgent: new HttpsAgent({ keepAlive: true }) },
      ...(config.SQS_ENDPOINT ? { endpoint: config.SQS_ENDPOINT, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
    }),
  );
  accountSqsRequests(client);
  return client;
}

/** A message to send: its body (any JSON value), and the SQS settings it needs. */
export interface OutgoingMessage {
  body: unknown;
  delaySeconds?: number;
  /** FIFO queues: the message's group and deduplication id. */
  groupId?: string;
  deduplicationId?: string;
}

/**
 * Sends the messages, ten per call, each body written by `queueMessageBody` (so that no character refuses it).
 * When the queue refuses any, it says so loudly, an error log and a `QueueMessagesRefused` metric, then throws:
 * the caller's request or invocation fails, and is retried, rather than losing the message quietly.
 *
 * @example
 * await sendQueueMessages(client, queueUrl, [{ body: { kind: 'campaign.tick' } }], 'campaign ticks');
 */
export async function sendQueueMessages(client: SQSClient, queueUrl: string, messages: readonly OutgoingMessage[], what: string): Promise<void> {
  for (let start = 0; start < messages.length; start += maxEntriesPerBatch) {
    const result = await client.send(
      new SendMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: messages.slice(start, start + maxEntriesPerBatch).map((message, index) => ({
          Id: String(index),
          MessageBody: queueMessageBody(message.body),
          ...(message.delaySeconds !== undefined ? { DelaySeconds: message.delaySeconds } : {}),
          ...(message.groupId !== undefined ? { MessageGroupId: message.groupId } : {}),
          ...(message.deduplicationId !== undefined ? { MessageDeduplicationId: message.deduplicationId } : {}),
        })),
      }),
    );
    const failed = result.Failed ?? [];
    if (failed.length === 0) continue;
    const reasons = failed.map((failure) => `${failure.Code}: ${failure.Message}`);
    const refused = failed.filter((failure) => failure.SenderFault).length;
    if (refused > 0) {
      logger.error(`The queue refused ${refused} ${what} message(s)`, { queueUrl, reasons });
      emfMetrics.add(queueRefusalsMetric, refused);
    }
    throw new Error(`${failed.length} ${what} message(s) not queued: ${reasons.join('; ')}`);
  }
}
