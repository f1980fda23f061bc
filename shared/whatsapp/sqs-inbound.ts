import { createHash } from 'node:crypto';
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import type { Config } from '../config.ts';
import type { WhatsappInbound } from '../domain/whatsapp.ts';
import { createSqsClient } from '../queue/sqs-scheduled-queue.ts';
import type { WhatsappQueueMessage } from '../schemas/whatsapp.ts';

/** SQS takes at most 10 messages per batch. */
const batchSize = 10;

const digest = (text: string): string => createHash('sha256').update(text).digest('hex');

/**
 * The WhatsApp inbound FIFO queue: one message group per number and customer, so a customer's messages and the
 * statuses of the replies to them are handled in order, one at a time, while other customers' run in parallel.
 * The deduplication id is Meta's message id (and status): a notification Meta sends again within 5 minutes is
 * dropped by SQS, a later one by the consumer's claim on the id.
 */
export function sqsWhatsappInbound(config: Config): WhatsappInbound {
  const queueUrl = config.WHATSAPP_INBOUND_QUEUE_URL;
  if (!queueUrl) return { enqueue: () => Promise.reject(new Error('WHATSAPP_INBOUND_QUEUE_URL is not set: WhatsApp notifications have nowhere to wait.')) };
  const client = createSqsClient(config);
  return {
    enqueue: async (messages) => {
      for (let start = 0; start < messages.length; start += batchSize) {
        const entries = messages.slice(start, start + batchSize).map((message, index) => ({
          Id: String(index),
          MessageBody: JSON.stringify(message),
          MessageGroupId: digest(`${message.numberId}/${customerOf(message)}`),
          MessageDeduplicationId: digest(message.kind === 'message' ? `message/${message.message.id}` : `status/${message.status.id}/${message.status.status}`),
        }));
        const result = await client.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries }));
        if (result.Failed?.length) throw new Error(`${result.Failed.length} WhatsApp notification(s) not queued: ${result.Failed.map((failure) => failure.Message).join('; ')}`);
      }
    },
  };
}

const customerOf = (message: WhatsappQueueMessage): string => (message.kind === 'message' ? message.customer.waId : message.status.recipient_id);
