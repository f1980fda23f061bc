import { createHash } from 'node:crypto';
import type { Config } from '../platform/config.ts';
import type { WhatsappInbound } from './whatsapp.ts';
import { createSqsClient, sendQueueMessages } from '../platform/queue/sqs-sender.ts';
import { customerKey, type WhatsappQueueMessage } from './whatsapp-schemas.ts';

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
      const outgoing = messages.map((message) => ({
        body: message,
        groupId: digest(`${message.numberId}/${customerOf(message)}`),
        deduplicationId: digest(message.kind === 'message' ? `message/${message.message.id}` : `status/${message.status.id}/${message.status.status}`),
      }));
      await sendQueueMessages(client, queueUrl, outgoing, 'WhatsApp inbound');
    },
  };
}

/** The customer a notification is about, keyed as their session is: a status names them by BSUID or phone number too. */
const customerOf = (message: WhatsappQueueMessage): string =>
  message.kind === 'message' ? customerKey(message.customer) : customerKey({ userId: message.status.recipient_user_id, waId: message.status.recipient_id ?? '' });
