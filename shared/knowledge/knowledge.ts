import type { EmbeddingModelV4, RerankingModelV4 } from '@ai-sdk/provider';
import { v7 as uuidv7 } from 'uuid';
import { ConcurrentModificationError, EmbedderMismatchError, KnowledgeStoreInUseError, KnowledgeStoreNotFoundError, NotFoundError, ValidationError } from '../platform/errors.ts';
import { embedderFor, EmbeddingDimensionsError, sameEmbedder, type Embedder } from './embedders.ts';
import { Bm25Index, searchIndex, vectorWeightFor, type IndexedChunk } from './hybrid-retrieval.ts';
import { uploadKey, type DocumentUploads } from './document-uploads.ts';
import type { IndexSnapshots } from './index-snapshots.ts';
import { logger } from '../platform/logger.ts';
import type { ModelCatalog } from '../models/model-catalog.ts';
import { VectorIndexNotFoundError, vectorLimits, type VectorStore } from './vector-store.ts';
import type { PortRanges } from '../platform/net/egress-guard.ts';
import type { SealResponse } from '../platform/ports.ts';
import { compareBy, paginate, type Page } from '../platform/schemas/common.ts';
import type {
  CreateDocumentInput,
  CreateDocumentUploadInput,
  CreateKnowledgeStoreInput,
  DocumentUpload,
  KnowledgeDocument,
  KnowledgeStore,
  ListDocumentsQuery,
  ListKnowledgeStoresQuery,
  QueryKnowledgeInput,
  RetrievedChunk,
  UpdateKnowledgeStoreInput,
} from './knowledge-schemas.ts';
import { maxDocumentFileBytes } from './knowledge-schemas.ts';
import { publicDocument, publicStore, type DynamoKnowledgeStore, type StoredDocument, type StoredKnowledgeStore } from './knowledge-store.ts';
import { assertMayConsume, type AdmissionDeps } from '../billing/admission.ts';
import { newId, nextUpdatedAt, type Clock } from '../platform/clock.ts';
import type { DomainEvent } from '../events/events.ts';

/** A job on the ingestion queue: build one version of a document, or clean up after a deleted store. */
export type IngestionMessage =
  | {
      kind: 'document.ingest';
      orgId: string;
      storeId: string;
      documentId: string;
      version: number;
      text?: string | undefined;
      url?: string | undefined;
      /** An uploaded file, in the uploads bucket. */
      objectKey?: string | undefined;
    }
  | { kind: 'store.delete'; orgId: string; storeId: string; indexName: string }
  | { kind: 'store.reindex'; orgId: string; storeId: string; indexName: string };

/**
 * The agents of an organization as far as knowledge sees them: the store each answers from, so that a store in use
 * is not deleted. Declared here so that knowledge does not depend on the agents context, whose store satisfies it
 * (shared/runtime.ts wires it as `agents`).
 */
export interface KnowledgeStoreUsers {
  list(orgId: string): Promise<readonly { id: string; knowledgeStoreId?: string | undefined }[]>;
}

/** Knowledge reads the organization's plan and stock (AdmissionDeps): documents are held to its `knowledge_chunks` quota. */
export interface KnowledgeDeps extends AdmissionDeps {
  knowledge: DynamoKnowledgeStore;
  agents: KnowledgeStoreUsers;
  vectors: VectorStore;
  /** BM25 index snapshots beside the vectors (docs/knowledge.md#retrieval). */
  snapshots: IndexSnapshots;
  clock: Clock;
  catalog: ModelCatalog;
  sendIngestion(message: IngestionMessage): Promise<void>;
  /** The embedding model of that embedder, or undefined when this deployment does not offer it. */
  embeddingModel(embedder: Embedder): EmbeddingModelV4 | undefined;
  /** The rerank model of that `provider/name` (the built-in one when undefined, or when the catalog no longer has it). */
  rerankingModel(modelId: string | undefined): RerankingModelV4;
  config: AdmissionDeps['config'] & { DOCUMENT_PROCESSING_TIMEOUT_SECONDS: number; LOOPBACK_EGRESS_PORTS: PortRanges; EGRESS_DENIED_PORTS: PortRanges };
}

/** What presigning, reading and deleting uploaded files needs (the knowledge API and the ingestion only). */
export interface UploadDeps {
  uploads: DocumentUploads;
}

/** Chunk metadata kept with each vector; only `documentId` and `version` are filterable (S3 Vectors' 2 KB). */
export const nonFilterableChunkKeys = ['documentName', 'text', 'headingPath'];

/** Vector keys are derivable (no delete-by-filter in S3 Vectors): a version's chunks are deleted by key. */
export const chunkKey = (documentId: string, version: number, index: number): string => `doc#${documentId}#v${version}#${index}`;

export const indexNameOf = (storeId: string): string => `ks-${storeId}`;

export function knowledgeStoreUpdated(document: StoredDocument, status: 'UPSERTED' | 'FAILED', at: string): DomainEvent {
  const eventId = uuidv7();
  return {
    eventId,
    type: 'knowledge_store.updated',
    orgId: document.orgId,
    createdAt: at,
    payload: { id: eventId, eventId, type: 'knowledge_store.updated', createdAt: at, data: { knowledgeStoreId: document.knowledgeStoreId, documentId: document.id, status } },
  };
}

/** The embedder a store's configuration names, refused (400) when the catalog lacks the model or the dimensions do not fit it. */
function configuredEmbedder(catalog: ModelCatalog, config: CreateKnowledgeStoreInput['config']): Embedder {
  if (!catalog.byName('EMBEDDING', config.embeddingModelId)) {
    throw new ValidationError(`Unknown embedding model ${config.embeddingModelId}.`, {
      details: [{ field: 'config.embeddingModelId', message: 'is not an embedding model of this deployment (GET /v1/chat/models?type=EMBEDDING)' }],
    });
  }
  const embedder = embedderFor(config.embeddingModelId, config.embeddingDimensions);
  if ('problem' in embedder) throw new ValidationError(`Invalid embedding dimensions: ${embedder.problem}.`, { details: [{ field: 'config.embeddingDimensions', message: embedder.problem }] });
  return embedder;
}

function assertRerankModel(catalog: ModelCatalog, model: string | undefined): void {
  if (model !== undefined && !catalog.byName('RERANK', model)) {
    throw new ValidationError(`Unknown rerank model ${model}.`, { details: [{ field: 'config.rerank.model', message: 'is not a rerank model of this deployment (GET /v1/chat/models?type=RERANK)' }] });
  }
}

export async function createKnowledgeStore(deps: KnowledgeDeps, orgId: string, input: CreateKnowledgeStoreInput, sealResponse?: SealResponse): Promise<KnowledgeStore> {
  const embedder = configuredEmbedder(deps.catalog, input.config);
  assertRerankModel(deps.catalog, input.config.rerank.model);
  const now = deps.clock.now().toISOString();
  const id = newId();
  const store: StoredKnowledgeStore = {
    id,
    orgId,
    name: input.name,
    ...(input.description === undefined ? {} : { description: input.description }),
    config: input.config,
    counts: { documents: 0, chunks: 0, bytes: 0 },
    embedder,
    createdAt: now,
    updatedAt: now,
    indexName: indexNameOf(id),
    revision: 0,
  };
  await deps.knowledge.createStore(store, sealResponse?.(publicStore(store)));
  return publicStore(store);
}

async function storeOf(deps: Pick<KnowledgeDeps, 'knowledge'>, orgId: string, storeId: string): Promise<StoredKnowledgeStore> {
  const store = await deps.knowledge.getStore(orgId, storeId);
  if (!store) throw new NotFoundError(`Knowledge store ${storeId} not found.`);
  return store;
}

export async function getKnowledgeStore(deps: Pick<KnowledgeDeps, 'knowledge'>, orgId: string, storeId: string): Promise<KnowledgeStore> {
  return publicStore(await storeOf(deps, orgId, storeId));
}

export async function listKnowledgeStores(deps: Pick<KnowledgeDeps, 'knowledge'>, orgId: string, query: ListKnowledgeStoresQuery): Promise<Page<KnowledgeStore>> {
  const wanted = query.name?.toLowerCase();
  const matching = (await deps.knowledge.listStores(orgId)).filter((store) => wanted === undefined || store.name.toLowerCase().includes(wanted)).map(publicStore);
  matching.sort(compareBy<KnowledgeStore>(query.sort.field, query.sort.direction));
  return paginate(matching, query.page, query.limit);
}

export async function updateKnowledgeStore(deps: KnowledgeDeps, orgId: string, storeId: string, changes: UpdateKnowledgeStoreInput): Promise<KnowledgeStore> {
  const previous = await storeOf(deps, orgId, storeId);
  assertRerankModel(deps.catalog, changes.config?.rerank?.model);
  const { minScore, ...configChanges } = changes.config ?? {};
  const config = { ...previous.config, ...configChanges };
  // Another model's dimensions are its own: the previous model's do not carry over.
  if (changes.config?.embeddingModelId !== undefined && changes.config.embeddingModelId !== previous.config.embeddingModelId && changes.config.embeddingDimensions === undefined) {
    delete config.embeddingDimensions;
  }
  if (minScore === null) delete config.minScore;
  else if (minScore !== undefined) config.minScore = minScore;
  const next: StoredKnowledgeStore = { ...previous, name: changes.name ?? previous.name, config, updatedAt: nextUpdatedAt(deps.clock, previous.updatedAt) };
  if (changes.description === null) delete next.description;
  else if (changes.description !== undefined) next.description = changes.description;
  // Only a change of embedder is checked against the catalog: a store whose model left it can still be renamed.
  const embedderChanged = changes.config?.embeddingModelId !== undefined || changes.config?.embeddingDimensions !== undefined;
  const reindex = embedderChanged ? reindexFor(deps.catalog, previous, config) : undefined;
  if (reindex === 'cancel') {
    delete next.reindexing;
    delete next.reindexIndexName;
  } else if (reindex) Object.assign(next, reindex);
  if (!(await deps.knowledge.updateStore(previous, next))) throw new ConcurrentModificationError('The knowledge store changed while it was being updated; retry.');
  if (next.reindexIndexName && reindex && reindex !== 'cancel') {
    try {
      await deps.sendIngestion({ kind: 'store.reindex', orgId, storeId, indexName: next.reindexIndexName });
    } catch (error) {
      // Without its message the re-index would show forever: the change is undone, and the PATCH may be retried.
      const undone: StoredKnowledgeStore = { ...next, config: previous.config, reindexing: previous.reindexing, reindexIndexName: previous.reindexIndexName, updatedAt: nextUpdatedAt(deps.clock, next.updatedAt) };
      await deps.knowledge.updateStore(next, undone);
      throw error;
    }
  }
  return publicStore(next);
}

/**
 * What a change of embedder asks for: nothing (same as building or built), a re-index into a new vector index
 * (`ks-<storeId>-<n>`, so that the current one keeps answering meanwhile), or cancelling the running one (back to
 * the embedder that built the store).
 */
function reindexFor(catalog: ModelCatalog, store: StoredKnowledgeStore, config: StoredKnowledgeStore['config']): Pick<StoredKnowledgeStore, 'reindexing' | 'reindexIndexName'> | 'cancel' | undefined {
  const wanted = configuredEmbedder(catalog, config);
  if (sameEmbedder(wanted, store.embedder)) return store.reindexing ? 'cancel' : undefined;
  if (store.reindexing && sameEmbedder(wanted, store.reindexing)) return undefined;
  return { reindexing: wanted, reindexIndexName: `${indexNameOf(store.id)}-${Date.now().toString(36)}` };
}

/**
 * Refuses while an agent uses the store; otherwise the store is gone at once, its chunks released from the
 * organization's stock, and its documents and vectors removed by the ingestion function (queued first, so nothing
 * is left behind when the delete succeeds).
 */
export async function deleteKnowledgeStore(deps: KnowledgeDeps, orgId: string, storeId: string): Promise<void> {
  let store = await storeOf(deps, orgId, storeId);
  const users = (await deps.agents.list(orgId)).filter((agent) => agent.knowledgeStoreId === storeId);
  if (users.length > 0) {
    throw new KnowledgeStoreInUseError(`Knowledge store ${storeId} is used by ${users.length} agent(s): ${users.map((agent) => agent.id).join(', ')}. Detach it first.`);
  }
  await deps.sendIngestion({ kind: 'store.delete', orgId, storeId, indexName: store.indexName });
  // The chunks released are those of the store as deleted: a document finishing meanwhile makes it read again.
  for (let attempt = 1; !(await deps.knowledge.deleteStore(store, deps.clock.now().toISOString())); attempt += 1) {
    if (attempt === 5) throw new ConcurrentModificationError('The knowledge store kept changing while it was being deleted; retry.');
    store = await storeOf(deps, orgId, storeId);
  }
}

/** An agent may name only a store of its own organization. */
export async function assertKnowledgeStoreExists(deps: { knowledge: Pick<DynamoKnowledgeStore, 'getStore'> }, orgId: string, storeId: string): Promise<void> {
  if (!(await deps.knowledge.getStore(orgId, storeId))) {
    throw new KnowledgeStoreNotFoundError(`Knowledge store ${storeId} not found.`, { details: [{ field: 'knowledgeStoreId', message: 'names no knowledge store of this organization' }] });
  }
}

/** Queues a document (or a new version of the document of that name) for ingestion; it answers PROCESSING. */
export async function submitDocument(deps: KnowledgeDeps, orgId: string, storeId: string, input: CreateDocumentInput): Promise<KnowledgeDocument> {
  await Promise.all([storeOf(deps, orgId, storeId), assertMayConsume(deps, orgId, 'knowledge_chunks')]);
  const at = deps.clock.now().toISOString();
  const content = 'url' in input ? { url: input.url } : { format: input.format, text: input.text };
  const bytes = content.text === undefined ? 0 : Buffer.byteLength(content.text);
  const processingDeadline = secondsAfter(at, deps.config.DOCUMENT_PROCESSING_TIMEOUT_SECONDS);
  const document = await deps.knowledge.submitDocument({ orgId, storeId, newId: newId(), name: input.name, format: content.format, url: content.url, bytes, at, processingDeadline });
  await deps.sendIngestion({ kind: 'document.ingest', orgId, storeId, documentId: document.id, version: document.version, ...content });
  return publicDocument(document);
}

const secondsAfter = (at: string, seconds: number): string => new Date(Date.parse(at) + seconds * 1000).toISOString();

/** How long a presigned upload stays valid; the document's processing limit starts when it closes. */
export const uploadWindowSeconds = 900;

/**
 * `POST …/documents/uploads`: the document (or its next version) PROCESSING, and a presigned S3 POST for its file.
 * The object's arrival (S3 → EventBridge → the router → the ingestion queue) starts its ingestion.
 */
export async function requestDocumentUpload(deps: KnowledgeDeps & UploadDeps, orgId: string, storeId: string, input: CreateDocumentUploadInput): Promise<DocumentUpload> {
  await Promise.all([storeOf(deps, orgId, storeId), assertMayConsume(deps, orgId, 'knowledge_chunks')]);
  const at = deps.clock.now().toISOString();
  const processingDeadline = secondsAfter(at, uploadWindowSeconds + deps.config.DOCUMENT_PROCESSING_TIMEOUT_SECONDS);
  const document = await deps.knowledge.submitDocument({ orgId, storeId, newId: newId(), name: input.name, format: input.format, bytes: 0, at, processingDeadline });
  const upload = await deps.uploads.presign(uploadKey(orgId, storeId, document.id, document.version), {
    contentType: mediaTypeByFormat[input.format],
    maxBytes: maxDocumentFileBytes,
    expiresSeconds: uploadWindowSeconds,
  });
  return {
    documentId: document.id,
    document: publicDocument(document),
    upload: { ...upload, expiresAt: secondsAfter(at, uploadWindowSeconds), maxBytes: maxDocumentFileBytes },
  };
}

/** The Content-Type an upload of each format must declare (the presigned policy pins it). */
const mediaTypeByFormat: Record<CreateDocumentUploadInput['format'], string> = {
  pdf: 'application/pdf',
  markdown: 'text/markdown',
  text: 'text/plain',
  html: 'text/html',
};

/** Fails a document still PROCESSING at `now` past its deadline with TIMEOUT (and its event); the document as it is after. */
async function timedOut(deps: KnowledgeDeps, document: StoredDocument): Promise<StoredDocument> {
  const deadline = document.processingDeadline ?? secondsAfter(document.updatedAt, deps.config.DOCUMENT_PROCESSING_TIMEOUT_SECONDS);
  if (document.status !== 'PROCESSING' || deps.clock.now().getTime() < Date.parse(deadline)) return document;
  const at = deps.clock.now().toISOString();
  const error = { code: 'TIMEOUT' as const, message: `Still processing at its deadline (${deadline}): the upload never arrived or its ingestion did not finish; submit the document again.` };
  const done = (await deps.knowledge.finishDocument(document, { status: 'FAILED', chunkCount: 0, error, at, event: knowledgeStoreUpdated(document, 'FAILED', at) })) === 'finished';
  return done ? { ...document, status: 'FAILED', chunkCount: 0, error, updatedAt: at } : ((await deps.knowledge.getDocument(document.orgId, document.knowledgeStoreId, document.id)) ?? document);
}

/** Overdue documents read per sweep; the next sweep takes the rest. */
const sweepBatch = 100;

/**
 * The scheduled sweep: every document still PROCESSING past its deadline is failed with TIMEOUT, so none stays
 * "indexing" forever even if nobody reads it. Reads run again a check of their own (`timedOut`), so a document is
 * never shown PROCESSING past its deadline between sweeps. Returns how many it failed.
 */
export async function sweepOverdueDocuments(deps: KnowledgeDeps): Promise<number> {
  let failed = 0;
  for (const overdue of await deps.knowledge.listOverdueDocuments(deps.clock.now().toISOString(), sweepBatch)) {
    // The index is read eventually consistent: decide on the document as it is now.
    const current = await deps.knowledge.getDocument(overdue.orgId, overdue.knowledgeStoreId, overdue.id);
    if (current && (await timedOut(deps, current)).status !== current.status) failed += 1;
  }
  return failed;
}

export async function getDocument(deps: KnowledgeDeps, orgId: string, storeId: string, documentId: string): Promise<KnowledgeDocument> {
  await storeOf(deps, orgId, storeId);
  const document = await deps.knowledge.getDocument(orgId, storeId, documentId);
  if (!document) throw new NotFoundError(`Document ${documentId} not found.`);
  return publicDocument(await timedOut(deps, document));
}

export async function listDocuments(deps: KnowledgeDeps, orgId: string, storeId: string, query: ListDocumentsQuery): Promise<Page<KnowledgeDocument>> {
  await storeOf(deps, orgId, storeId);
  const documents = await Promise.all((await deps.knowledge.listDocuments(orgId, storeId)).map((document) => timedOut(deps, document)));
  const matching = documents.filter((document) => query.status === undefined || document.status === query.status).map(publicDocument);
  matching.sort(compareBy<KnowledgeDocument>('createdAt', 'desc'));
  return paginate(matching, query.page, query.limit);
}

/** Deletes the document at once for readers; its vectors are deleted by key right after. */
export async function deleteDocument(deps: KnowledgeDeps, orgId: string, storeId: string, documentId: string): Promise<void> {
  const store = await storeOf(deps, orgId, storeId);
  const document = await deps.knowledge.getDocument(orgId, storeId, documentId);
  if (!document || !(await deps.knowledge.deleteDocument(document, deps.clock.now().toISOString()))) throw new NotFoundError(`Document ${documentId} not found.`);
  const versions = [
    { version: document.version, chunkCount: document.chunkCount },
    ...(document.activeVersion !== undefined && document.activeVersion !== document.version ? [{ version: document.activeVersion, chunkCount: document.activeChunkCount }] : []),
    ...(document.retired ? [document.retired] : []),
  ];
  for (const { version, chunkCount } of versions) await deleteVersionVectors(deps.vectors, store.indexName, document.id, version, chunkCount);
}

export async function deleteVersionVectors(vectors: VectorStore, indexName: string, documentId: string, version: number, chunkCount: number): Promise<void> {
  const keys = Array.from({ length: chunkCount }, (_, index) => chunkKey(documentId, version, index));
  try {
    for (let start = 0; start < keys.length; start += vectorLimits.maxVectorsPerWrite) {
      await vectors.deleteVectors(indexName, keys.slice(start, start + vectorLimits.maxVectorsPerWrite));
    }
  } catch (error) {
    if (!(error instanceof VectorIndexNotFoundError)) throw error;
  }
}

interface RetrievalState {
  revision: number;
  bm25: Bm25Index;
}

/** Per store, the BM25 index over the chunks that answer, rebuilt when the store's revision moves on. */
const retrievalStates = new Map<string, RetrievalState>();
const maxCachedStores = 200;

/**
 * The store's BM25 index at its revision: this process's, else the snapshot of that revision (one read), else
 * rebuilt from the vectors' metadata (every vector listed) and snapshotted for the next cold process.
 */
async function retrievalState(deps: Pick<KnowledgeDeps, 'knowledge' | 'vectors' | 'snapshots'>, store: StoredKnowledgeStore): Promise<RetrievalState> {
  const cacheKey = `${store.orgId}/${store.id}`;
  const cached = retrievalStates.get(cacheKey);
  if (cached && cached.revision === store.revision) return cached;
  const bm25 = (await snapshotOf(deps, store)) ?? (await rebuiltIndex(deps, store));
  const state = { revision: store.revision, bm25 };
  if (retrievalStates.size >= maxCachedStores) retrievalStates.delete(retrievalStates.keys().next().value as string);
  retrievalStates.set(cacheKey, state);
  return state;
}

async function snapshotOf(deps: Pick<KnowledgeDeps, 'snapshots'>, store: StoredKnowledgeStore): Promise<Bm25Index | undefined> {
  try {
    const snapshot = await deps.snapshots.load(store.indexName, store.revision);
    return snapshot === undefined ? undefined : Bm25Index.fromSnapshot(snapshot);
  } catch (error) {
    // A snapshot is a cache: unreadable, the index is rebuilt from the vectors.
    logger.warn('BM25 snapshot unreadable; rebuilding the index', { storeId: store.id, revision: store.revision, error });
    return undefined;
  }
}

async function rebuiltIndex(deps: Pick<KnowledgeDeps, 'knowledge' | 'vectors' | 'snapshots'>, store: StoredKnowledgeStore): Promise<Bm25Index> {
  const bm25 = new Bm25Index(await activeChunks(deps, store));
  try {
    await deps.snapshots.save(store.indexName, store.revision, bm25.toSnapshot());
  } catch (error) {
    logger.warn('BM25 snapshot not saved; the next cold process rebuilds the index', { storeId: store.id, revision: store.revision, error });
  }
  return bm25;
}

/** The chunks of the store's index that answer: those of each document's active version, read from the vectors' metadata. */
export async function activeChunks(deps: Pick<KnowledgeDeps, 'knowledge' | 'vectors'>, store: StoredKnowledgeStore): Promise<IndexedChunk[]> {
  const active = new Map<string, number>();
  for (const document of await deps.knowledge.listDocuments(store.orgId, store.id)) {
    if (document.activeVersion !== undefined) active.set(document.id, document.activeVersion);
  }
  const chunks: IndexedChunk[] = [];
  try {
    for await (const vector of deps.vectors.listVectors(store.indexName)) {
      const metadata = vector.metadata;
      if (active.get(String(metadata.documentId)) !== Number(metadata.version)) continue;
      chunks.push({
        key: vector.key,
        documentId: String(metadata.documentId),
        documentName: String(metadata.documentName),
        version: Number(metadata.version),
        text: String(metadata.text),
        headingPath: Array.isArray(metadata.headingPath) ? metadata.headingPath : [],
        ...(typeof metadata.page === 'number' ? { page: metadata.page } : {}),
      });
    }
  } catch (error) {
    if (!(error instanceof VectorIndexNotFoundError)) throw error;
  }
  return chunks;
}

export interface RetrievalOptions {
  topK?: number | undefined;
  rerank?: boolean | undefined;
}

/** Retrieval over a store: its chunks that answer now, searched as `searchIndex` does (docs/knowledge.md#retrieval). */
export async function retrieve(
  deps: Pick<KnowledgeDeps, 'knowledge' | 'vectors' | 'snapshots' | 'embeddingModel' | 'rerankingModel'>,
  store: StoredKnowledgeStore,
  query: string,
  options: RetrievalOptions = {},
): Promise<RetrievedChunk[]> {
  const { embedder } = store;
  const mismatch = `The store's vectors were built by ${embedder.modelId} with ${embedder.dimensions} dimensions`;
  const embeddingModel = deps.embeddingModel(embedder);
  if (!embeddingModel) throw new EmbedderMismatchError(`${mismatch}, which this deployment no longer offers; re-index the store with one it offers (PATCH config.embeddingModelId).`);
  const { bm25 } = await retrievalState(deps, store);
  try {
    return await searchIndex({ bm25, vectors: deps.vectors, indexName: store.indexName, embeddingModel, vectorWeight: vectorWeightFor(embedder.modelId) }, query, {
      topK: options.topK ?? store.config.topK,
      reranker: (options.rerank ?? store.config.rerank.enabled) ? deps.rerankingModel(store.config.rerank.model) : undefined,
      minScore: store.config.minScore,
    });
  } catch (error) {
    if (error instanceof EmbeddingDimensionsError) throw new EmbedderMismatchError(`${mismatch}; ${error.message} Re-index the store (PATCH config.embeddingModelId or config.embeddingDimensions).`);
    throw error;
  }
}

/** `POST …/query`: what an agent on this store would see for `query`. */
export async function queryKnowledgeStore(deps: KnowledgeDeps, orgId: string, storeId: string, input: QueryKnowledgeInput): Promise<{ data: RetrievedChunk[] }> {
  const store = await storeOf(deps, orgId, storeId);
  return { data: await retrieve(deps, store, input.query, { topK: input.topK, rerank: input.rerank }) };
}

/** The store of an agent, for a turn; undefined when it was deleted meanwhile. */
export const storeForTurn = (deps: Pick<KnowledgeDeps, 'knowledge'>, orgId: string, storeId: string): Promise<StoredKnowledgeStore | undefined> =>
  deps.knowledge.getStore(orgId, storeId);
