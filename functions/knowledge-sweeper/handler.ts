import { sweepOverdueDocuments } from '../../shared/knowledge/knowledge.ts';
import { knowledgeRuntime } from '../../shared/knowledge/knowledge-runtime.ts';
import { logger } from '../../shared/platform/logger.ts';

/** Invoked by an EventBridge schedule (every 5 minutes): fails documents PROCESSING past their deadline with TIMEOUT. */
export async function handler(): Promise<{ timedOut: number }> {
  const timedOut = await sweepOverdueDocuments(knowledgeRuntime());
  if (timedOut > 0) logger.warn('documents failed with TIMEOUT by the sweep', { timedOut });
  return { timedOut };
}
