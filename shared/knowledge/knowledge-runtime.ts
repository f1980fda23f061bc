import { join } from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import { S3VectorsClient } from '@aws-sdk/client-s3vectors';
import type { Config } from '../platform/config.ts';
import type { IngestionMessage, KnowledgeDeps } from './knowledge.ts';
import type { EmbeddingModelV4 } from '@ai-sdk/provider';
import { withDimensions, type Embedder } from './embedders.ts';
import { LocalSnapshotFiles, S3Snapshots, type IndexSnapshots } from './index-snapshots.ts';
import { LocalFlatVectorStore } from './local-flat-index.ts';
import { builtinRerankerId } from '../models/reranker.ts';
import { logger } from '../platform/logger.ts';
import type { ModelCatalog } from '../models/model-catalog.ts';
import { createEmbeddingModel, createRerankingModel } from '../models/model-providers.ts';
import { S3VectorsStore } from './s3-vectors-store.ts';
import type { VectorStore } from './vector-store.ts';
import { createSqsClient, sendQueueMessages } from '../platform/queue/sqs-sender.ts';
import { runtime, type Runtime } from '../runtime.ts';
import { traceAwsClient } from '../platform/tracing.ts';

export type KnowledgeRuntime = Runtime & KnowledgeDeps;

/** S3 Vectors when the stack names a vector bucket, the local flat index when `npm start` names a directory. */
function vectorStoreFromConfig(config: Config): VectorStore {
  if (config.S3_VECTORS_BUCKET) return new S3VectorsStore(traceAwsClient(new S3VectorsClient({ region: config.AWS_REGION })), config.S3_VECTORS_BUCKET);
  if (config.KNOWLEDGE_VECTOR_DIR) return new LocalFlatVectorStore(config.KNOWLEDGE_VECTOR_DIR);
  throw new Error('Set S3_VECTORS_BUCKET or KNOWLEDGE_VECTOR_DIR: knowledge stores need a vector store.');
}

/** The stack's snapshot bucket (fauxqs's S3 when `S3_ENDPOINT` is set), else files beside the local vector index. */
function snapshotsFromConfig(config: Config): IndexSnapshots {
  if (config.KNOWLEDGE_SNAPSHOT_BUCKET) {
    const endpoint = config.S3_ENDPOINT;
    const client = traceAwsClient(new S3Client({ region: config.AWS_REGION, ...(endpoint ? { endpoint, forcePathStyle: true, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}) }));
    return new S3Snapshots(client, config.KNOWLEDGE_SNAPSHOT_BUCKET);
  }
  if (config.KNOWLEDGE_VECTOR_DIR) return new LocalSnapshotFiles(join(config.KNOWLEDGE_VECTOR_DIR, 'bm25'));
  throw new Error('Set KNOWLEDGE_SNAPSHOT_BUCKET or KNOWLEDGE_VECTOR_DIR: knowledge stores keep BM25 snapshots.');
}

/**
 * The ingestion queue is FIFO, grouped by store: one store's documents and clean-up are handled one at a time, in
 * the order they were queued. A message is deduplicated by what it asks for (a version, a store's clean-up).
 */
export const ingestionMessageGroup = (message: IngestionMessage) => ({
  groupId: message.storeId,
  deduplicationId: message.kind === 'document.ingest' ? `${message.documentId}#v${message.version}` : `${message.kind}#${message.indexName}`,
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
    await sendQueueMessages(client, queueUrl, [{ body: message, ...ingestionMessageGroup(message) }], 'knowledge ingestion');
  };
}

/**
 * Embedding models by embedder, from the catalog: a provider's asked for the embedder's dimensions on every call,
 * and every model's answers checked to have them (a store's index has one dimension).
 */
function embeddingModels(catalog: ModelCatalog, config: Config): (embedder: Embedder) => EmbeddingModelV4 | undefined {
  const models = new Map<string, EmbeddingModelV4>();
  return (embedder) => {
    const key = `${embedder.modelId}@${embedder.dimensions}`;
    const cached = models.get(key);
    if (cached) return cached;
    const entry = catalog.byName('EMBEDDING', embedder.modelId);
    if (!entry) return undefined;
    const model = withDimensions(createEmbeddingModel(entry, config), embedder.dimensions, entry.provider !== 'builtin');
    models.set(key, model);
    return model;
  };
}

let processRuntime: KnowledgeRuntime | undefined;

/** What the knowledge routes, the ingestion function and the turns of agents with a store need. */
export function knowledgeRuntime(): KnowledgeRuntime {
  if (!processRuntime) {
    const base = runtime();
    const builtinReranker = createRerankingModel(base.catalog.byName('RERANK', builtinRerankerId)!, base.config);
    let vectors: VectorStore | undefined;
    let snapshots: IndexSnapshots | undefined;
    processRuntime = {
      ...base,
      // Built on first use, so that functions which never touch vectors need no vector store configured.
      get vectors() {
        vectors ??= vectorStoreFromConfig(base.config);
        return vectors;
      },
      get snapshots() {
        snapshots ??= snapshotsFromConfig(base.config);
        return snapshots;
      },
      sendIngestion: ingestionSender(base.config),
      embeddingModel: embeddingModels(base.catalog, base.config),
      rerankingModel: (modelId) => {
        const model = modelId === undefined ? undefined : base.catalog.byName('RERANK', modelId);
        if (modelId !== undefined && !model) logger.warn('rerank model no longer offered; the built-in reranker stands in', { modelId });
        return model ? createRerankingModel(model, base.config) : builtinReranker;
      },
    };
  }
  return processRuntime;
}
