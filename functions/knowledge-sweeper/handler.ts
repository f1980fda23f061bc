import { sweepOverdueDocuments } from '../../shared/knowledge/knowledge.ts';
import { knowledgeRuntime } from '../../shared/knowledge/knowledge-runtime.ts';
import { logger } from '../../shared/platform/logger.ts';
import { observedHandler } from '../../shared/platform/invocation.ts';

/** Invoked by an EventBridge schedule (every 5 minutes): fails documents PROCESSING past their deadline with TIMEOUT. */
async function handle(): Promise<{ timedOut: number }> {
  const timedOut = await sweepOverdueDocuments(knowledgeRuntime());
  if (timedOut > 0) logger.warn('documents failed with TIMEOUT by the sweep', { timedOut });
  return { timedOut };
}

export const handler = observedHandler('knowledge-sweeper', handle);
