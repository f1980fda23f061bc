import { embedMany } from 'ai';
import { indexedText } from './chunker.ts';
import { vectorLimits } from './vector-store.ts';
import { logger } from '../platform/logger.ts';
import { activeChunks, nonFilterableChunkKeys, type IngestionMessage, type KnowledgeDeps } from './knowledge.ts';

/** Chunks embedded per `embedMany` (and written per PutVectors); calls in flight, as at ingestion. */
const reindexBatch = 100;
const embeddingParallelism = 4;

/**
 * Re-indexes a store with the embedder its `reindexing` names (docs/knowledge.md#re-indexing): the chunks that answer
 * are read from the current index, embedded again and written to the new index under the same keys; then, in one
 * conditional write, the new index and embedder answer (only if no document changed the store meanwhile), and the
 * old index and its snapshots are deleted. It waits (the message comes back) while a document is being ingested, and
 * starts over when the store changed during the copy. A message for a re-index no longer asked for does nothing.
 */
export async function reindexStore(deps: KnowledgeDeps, message: Extract<IngestionMessage, { kind: 'store.reindex' }>): Promise<'reindexed' | 'skipped'> {
  const store = await deps.knowledge.getStore(message.orgId, message.storeId);
  if (!store?.reindexing || store.reindexIndexName !== message.indexName) {
    // Cancelled, asked again with another embedder, or the store deleted: what this re-index built answers nothing.
    if (store?.indexName !== message.indexName) await deps.vectors.deleteIndex(message.indexName);
    return 'skipped';
  }
  await waitForIngestions(deps, store.orgId, store.id);
  const model = deps.embeddingModel(store.reindexing);
  if (!model) throw new Error(`Embedding model ${store.reindexing.modelId} is not offered: the re-index of ${store.id} cannot run.`);
  // Anew on every attempt: a chunk copied by an attempt the store outran must not linger.
  await deps.vectors.deleteIndex(message.indexName);
  await deps.vectors.createIndex({ name: message.indexName, dimension: store.reindexing.dimensions, nonFilterableMetadataKeys: nonFilterableChunkKeys });
  const chunks = await activeChunks(deps, store);
  for (let start = 0; start < chunks.length; start += reindexBatch) {
    const batch = chunks.slice(start, start + reindexBatch);
    const { embeddings } = await embedMany({ model, values: batch.map(indexedText), maxParallelCalls: embeddingParallelism, maxRetries: 2 });
    const records = batch.map((chunk, index) => ({
      key: chunk.key,
      data: embeddings[index]!,
      metadata: { documentId: chunk.documentId, version: chunk.version, documentName: chunk.documentName, text: chunk.text, headingPath: chunk.headingPath },
    }));
    for (let offset = 0; offset < records.length; offset += vectorLimits.maxVectorsPerWrite) await deps.vectors.putVectors(message.indexName, records.slice(offset, offset + vectorLimits.maxVectorsPerWrite));
  }
  await waitForIngestions(deps, store.orgId, store.id);
  if (!(await deps.knowledge.finishReindex(store, deps.clock.now().toISOString()))) {
    const current = await deps.knowledge.getStore(message.orgId, message.storeId);
    if (current?.reindexIndexName !== message.indexName) return reindexStore(deps, message);
    throw new Error(`Knowledge store ${store.id} changed while it was re-indexed; the re-index starts over.`);
  }
  await deps.vectors.deleteIndex(store.indexName);
  await deps.snapshots.deleteAll(store.indexName);
  logger.info('knowledge store re-indexed', { storeId: store.id, embedder: store.reindexing, chunks: chunks.length });
  return 'reindexed';
}

/** A document being ingested writes to the current index: the switch waits for it (the message is retried). */
async function waitForIngestions(deps: KnowledgeDeps, orgId: string, storeId: string): Promise<void> {
  const limitMs = deps.config.DOCUMENT_PROCESSING_TIMEOUT_SECONDS * 1000;
  const now = deps.clock.now().getTime();
  const busy = (await deps.knowledge.listDocuments(orgId, storeId)).filter((document) => document.status === 'PROCESSING' && now - Date.parse(document.updatedAt) < limitMs);
  if (busy.length > 0) throw new Error(`Knowledge store ${storeId} has ${busy.length} document(s) being ingested; its re-index waits for them.`);
}
