import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { S3VectorsClient } from '@aws-sdk/client-s3vectors';
import type { Config } from './config.ts';
import type { IngestionMessage, KnowledgeDeps } from './domain/knowledge.ts';
import { builtinEmbeddingModel, builtinEmbeddingModelId } from './knowledge/builtin-embedder.ts';
import { LocalFlatVectorStore } from './knowledge/local-flat-index.ts';
import { builtinRerankingModel } from './knowledge/reranker.ts';
import { S3VectorsStore } from './knowledge/s3-vectors-store.ts';
import type { VectorStore } from './knowledge/vector-store.ts';
import { createSqsClient } from './queue/sqs-scheduled-queue.ts';
import { runtime, type Runtime } from './runtime.ts';

export type KnowledgeRuntime = Runtime & KnowledgeDeps;

/** S3 Vectors when the stack names a vector bucket, the local flat index when `npm start` names a directory. */
function vectorStoreFromConfig(config: Config): VectorStore {
  if (config.S3_VECTORS_BUCKET) return new S3VectorsStore(new S3VectorsClient({ region: config.AWS_REGION }), config.S3_VECTORS_BUCKET);
  if (config.KNOWLEDGE_VECTOR_DIR) return new LocalFlatVectorStore(config.KNOWLEDGE_VECTOR_DIR);
  throw new Error('Set S3_VECTORS_BUCKET or KNOWLEDGE_VECTOR_DIR: knowledge stores need a vector store.');
}

/**
 * The ingestion queue is FIFO, grouped by store: one store's documents and clean-up are handled one at a time, in
 * the order they were queued. A message is deduplicated by what it asks for (a version, a store's clean-up).
 */
export const ingestionMessageGroup = (message: IngestionMessage) => ({
  MessageGroupId: message.storeId,
  MessageDeduplicationId: message.kind === 'store.delete' ? `store.delete#${message.storeId}` : `${message.documentId}#v${message.version}`,
});

function ingestionSender(config: Config): (message: IngestionMessage) => Promise<void> {
  const queueUrl = config.KNOWLEDGE_INGESTION_QUEUE_URL;
  if (!queueUrl) {
    return async () => {
      throw new Error('KNOWLEDGE_INGESTION_QUEUE_URL is not set: this deployment has no ingestion queue');
    };
  }
  const client = createSqsClient(config);
  return async (message) => {
    await client.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: JSON.stringify(message), ...ingestionMessageGroup(message) }));
  };
}

let processRuntime: KnowledgeRuntime | undefined;

/** What the knowledge routes, the ingestion function and the turns of agents with a store need. */
export function knowledgeRuntime(): KnowledgeRuntime {
  if (!processRuntime) {
    const base = runtime();
    const builtinEmbedder = builtinEmbeddingModel();
    const builtinReranker = builtinRerankingModel();
    let vectors: VectorStore | undefined;
    processRuntime = {
      ...base,
      // Built on first use, so that functions which never touch vectors need no vector store configured.
      get vectors() {
        vectors ??= vectorStoreFromConfig(base.config);
        return vectors;
      },
      sendIngestion: ingestionSender(base.config),
      embeddingModel: (modelId) => (modelId === builtinEmbeddingModelId ? builtinEmbedder : undefined),
      rerankingModel: () => builtinReranker,
    };
  }
  return processRuntime;
}
