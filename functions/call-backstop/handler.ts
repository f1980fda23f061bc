import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import * as z from 'zod';
import { endSilentCall } from '../../shared/voice/voice.ts';
import { logger } from '../../shared/platform/logger.ts';
import { handleQueueBatch } from '../../shared/platform/queue/queue-message.ts';
import { voiceRuntime } from '../../shared/voice/voice-runtime.ts';
import { observedHandler } from '../../shared/platform/invocation.ts';

const backstopMessage = z.object({ kind: z.literal('call.backstop'), orgId: z.string().min(1), sessionId: z.uuid() });

/**
 * A call's backstop schedule fired (EventBridge Scheduler → the call-backstop queue): a call whose carrier never
 * reported its end is ended now, once. Most calls ended long before, and their message changes nothing.
 */
async function handle(event: SQSEvent): Promise<SQSBatchResponse> {
  const deps = voiceRuntime();
  return handleQueueBatch(event, { schema: backstopMessage, name: 'call backstop', logFields: (message) => ({ sessionId: message.sessionId }) }, async (message) => {
    const ended = await endSilentCall(deps, message.orgId, message.sessionId);
    logger.info('call backstop', { sessionId: message.sessionId, ended });
  });
}

export const handler = observedHandler('call-backstop', handle);
