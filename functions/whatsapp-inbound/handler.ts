import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { handleQueuedNotification } from '../../shared/whatsapp/whatsapp.ts';
import { handleQueueBatch } from '../../shared/platform/queue/queue-message.ts';
import { whatsappQueueMessage } from '../../shared/whatsapp/whatsapp-schemas.ts';
import { whatsappConversationRuntime } from '../../shared/whatsapp/whatsapp-runtime.ts';
import { observedHandler } from '../../shared/platform/invocation.ts';

/**
 * The WhatsApp inbound function, fed by the FIFO queue: answers each message with a turn and records each status
 * on the reply it belongs to. In FIFO order: after a failure, the rest of the batch comes again, so nothing overtakes it.
 */
async function handle(event: SQSEvent): Promise<SQSBatchResponse> {
  const deps = whatsappConversationRuntime();
  const options = {
    schema: whatsappQueueMessage,
    name: 'WhatsApp notification',
    order: 'fifo' as const,
    logFields: (message: { kind: string; orgId: string; numberId: string }) => ({ kind: message.kind, orgId: message.orgId, numberId: message.numberId }),
  };
  return handleQueueBatch(event, options, (message) => handleQueuedNotification(deps, message));
}

export const handler = observedHandler('whatsapp-inbound', handle);
