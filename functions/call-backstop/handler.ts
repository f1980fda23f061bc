import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import * as z from 'zod';
import { endSilentCall } from '../../shared/domain/voice.ts';
import { logger } from '../../shared/logger.ts';
import { voiceRuntime } from '../../shared/voice-runtime.ts';
import { parseQueueMessage } from '../../shared/queue/queue-message.ts';

const backstopMessage = z.object({ kind: z.literal('call.backstop'), orgId: z.string().min(1), sessionId: z.uuid() });

const parse = (record: SQSRecord): z.output<typeof backstopMessage> | undefined => parseQueueMessage(backstopMessage, record);

/**
 * A call's backstop schedule fired (EventBridge Scheduler → the call-backstop queue): a call whose carrier never
 * reported its end is ended now, once. Most calls ended long before, and their message changes nothing.
 */
export async function handler(event: SQSEvent): Promise<SQSBatchResponse> {
  const deps = voiceRuntime();
  const failures = await Promise.all(
    event.Records.map(async (record) => {
      const message = parse(record);
      if (!message) {
        logger.error('not a call backstop message; left for the dead-letter queue', { messageId: record.messageId });
        return record.messageId;
      }
      try {
        const ended = await endSilentCall(deps, message.orgId, message.sessionId);
        logger.info('call backstop', { sessionId: message.sessionId, ended });
        return undefined;
      } catch (error) {
        logger.error('call backstop failed; the queue hands it over again', { sessionId: message.sessionId, error: error as Error });
        return record.messageId;
      }
    }),
  );
  return { batchItemFailures: failures.filter((id) => id !== undefined).map((itemIdentifier) => ({ itemIdentifier })) };
}
