import { embedMany } from 'ai';
import { chunkPages, chunkText, indexedText, type TextChunk } from './chunker.ts';
import { PdfLimitError, pdfPageTexts } from './pdf-text.ts';
import { egressPolicyFromConfig, guardedRequest, type GuardedResponse } from '../platform/net/egress-guard.ts';
import { vectorLimits } from './vector-store.ts';
import { logger } from '../platform/logger.ts';
import { maxDocumentFileBytes, maxDocumentTextBytes, maxPdfPages, type DocumentErrorCode, type DocumentFormat } from './knowledge-schemas.ts';
import type { StoredDocument, StoredKnowledgeStore } from './knowledge-store.ts';
import { currentPlan } from '../billing/admission.ts';
import { reindexStore } from './knowledge-reindex.ts';
import { bucketOf } from '../billing/usage.ts';
import { chunkKey, deleteVersionVectors, knowledgeStoreUpdated, nonFilterableChunkKeys, type IngestionMessage, type KnowledgeDeps, type UploadDeps } from './knowledge.ts';

/** Texts embedded per call of `embedMany`, and calls in flight (the Bedrock provider embeds one text per call). */
const embeddingParallelism = 4;

/** A failure that is the document's, not the platform's: it ends FAILED with this code instead of being retried. */
export class DocumentFailure extends Error {
  readonly code: DocumentErrorCode;
  constructor(code: DocumentErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }
}

/** The ingestion reads (and deletes) uploaded files besides what every knowledge function has. */
export type IngestionDeps = KnowledgeDeps & UploadDeps;

export type IngestionOutcome = 'upserted' | 'failed' | 'skipped' | 'store-deleted' | 'reindexed';

/**
 * Handles one ingestion message. A document version is parsed, chunked, embedded and written as vectors under
 * derivable keys (a retry overwrites the same keys: no duplicates), then made the version that answers in one
 * transaction with its event; the superseded version's vectors are deleted after. A message for a version that
 * is no longer PROCESSING (done, replaced, swept, deleted) only finishes that clean-up.
 */
export async function handleIngestionMessage(deps: IngestionDeps, message: IngestionMessage): Promise<IngestionOutcome> {
  if (message.kind === 'store.delete') return deleteStoreContents(deps, message);
  if (message.kind === 'store.reindex') return reindexStore(deps, message);
  const store = await deps.knowledge.getStore(message.orgId, message.storeId);
  const document = store && (await deps.knowledge.getDocument(message.orgId, message.storeId, message.documentId));
  if (!store || !document) return 'skipped';
  if (document.status !== 'PROCESSING' || document.version !== message.version) {
    await retireSuperseded(deps, store, document);
    return 'skipped';
  }
  let chunkCount: number;
  let chunkQuota: number | null;
  let content = document;
  try {
    const source = await loadSource(deps, message, document);
    content = { ...document, format: source.format, bytes: source.body.length };
    const chunks = await documentChunks(store, source);
    chunkQuota = await chunkQuotaFitting(deps, document, chunks.length);
    chunkCount = await writeVectors(deps, store, content, chunks);
  } catch (error) {
    if (!(error instanceof DocumentFailure)) throw error;
    return failDocument(deps, message, document, error);
  }
  const at = deps.clock.now().toISOString();
  const finished = await deps.knowledge.finishDocument(content, { status: 'UPSERTED', chunkCount, at, event: knowledgeStoreUpdated(document, 'UPSERTED', at), chunkQuota });
  if (finished === 'over-quota') {
    // Other documents of the organization took the room meanwhile: this version never answers.
    await deleteVersionVectors(deps.vectors, store.indexName, document.id, document.version, chunkCount);
    const stored = await storedChunks(deps, document.orgId);
    return failDocument(deps, message, document, new DocumentFailure('QUOTA_EXCEEDED', overQuotaMessage(chunkCount, stored, (await currentPlan(deps, document.orgId)).id, chunkQuota ?? 0)));
  }
  if (finished === 'moved-on') {
    // Replaced, deleted or failed meanwhile: this version's vectors answer nothing, unless a redelivery of this same
    // message (a visibility timeout that ran out mid-way) finished this very version first: then they are live.
    const now = await deps.knowledge.getDocument(message.orgId, message.storeId, message.documentId);
    if (now?.activeVersion !== document.version) await deleteVersionVectors(deps.vectors, store.indexName, document.id, document.version, chunkCount);
    return 'skipped';
  }
  const current = await deps.knowledge.getDocument(message.orgId, message.storeId, message.documentId);
  if (current) await retireSuperseded(deps, store, current);
  await discardUpload(deps, message);
  return 'upserted';
}

async function failDocument(deps: IngestionDeps, message: Extract<IngestionMessage, { kind: 'document.ingest' }>, document: StoredDocument, failure: DocumentFailure): Promise<IngestionOutcome> {
  const at = deps.clock.now().toISOString();
  await deps.knowledge.finishDocument(document, { status: 'FAILED', chunkCount: 0, error: { code: failure.code, message: failure.message }, at, event: knowledgeStoreUpdated(document, 'FAILED', at) });
  logger.warn('document failed', { documentId: document.id, code: failure.code, error: failure });
  await discardUpload(deps, message);
  return 'failed';
}

/** The chunks the organization stores now, in all its stores (the usage stock). */
async function storedChunks(deps: IngestionDeps, orgId: string): Promise<number> {
  return (await deps.usage.periodCounts(orgId, bucketOf(deps.clock.now().toISOString(), 'month'))).knowledge_chunks ?? 0;
}

/**
 * The plan's `knowledge_chunks` quota (null: unlimited), once it is known the document's chunks fit in it beside
 * those the organization stores (the version it replaces leaving room): checked before embedding, so a document
 * too big for the quota costs no embedding. The transaction that makes it live checks again, exactly.
 */
async function chunkQuotaFitting(deps: IngestionDeps, document: StoredDocument, chunkCount: number): Promise<number | null> {
  const [plan, stored] = await Promise.all([currentPlan(deps, document.orgId), storedChunks(deps, document.orgId)]);
  const quota = plan.quotas.knowledge_chunks;
  const growth = chunkCount - document.activeChunkCount;
  if (quota !== null && growth > 0 && stored + growth > quota) throw new DocumentFailure('QUOTA_EXCEEDED', overQuotaMessage(chunkCount, stored, plan.id, quota));
  return quota;
}

const overQuotaMessage = (chunkCount: number, stored: number, planId: string, quota: number): string =>
  `The document has ${chunkCount} chunks; beside the ${stored} the organization stores, that is more than the ${planId} plan's knowledge_chunks quota of ${quota}. Delete documents or move to a larger plan, then submit it again.`;

/** An uploaded file is kept only until its version is built (the bucket's lifecycle rule removes any left over). */
async function discardUpload(deps: IngestionDeps, message: Extract<IngestionMessage, { kind: 'document.ingest' }>): Promise<void> {
  if (message.objectKey !== undefined) await deps.uploads.delete(message.objectKey);
}

/** A document's bytes, and the format to read them in. */
interface DocumentSource {
  format: DocumentFormat;
  body: Buffer;
}

async function loadSource(deps: IngestionDeps, message: Extract<IngestionMessage, { kind: 'document.ingest' }>, document: StoredDocument): Promise<DocumentSource> {
  if (message.url !== undefined) return fetchDocument(deps, message.url);
  if (message.objectKey !== undefined) return { format: document.format ?? 'text', body: await deps.uploads.read(message.objectKey) };
  return { format: document.format ?? 'markdown', body: Buffer.from(message.text ?? '') };
}

/** Parses and chunks a document: Markdown and HTML by headings, plain text as it is, a PDF page by page. */
async function documentChunks(store: StoredKnowledgeStore, source: DocumentSource): Promise<TextChunk[]> {
  if (source.format === 'pdf') {
    const pages = await readPdf(source.body);
    const chunks = chunkPages(pages, store.config.chunking);
    if (chunks.length === 0) throw new DocumentFailure('NO_TEXT', `The PDF has ${pages.length} page(s) but no text layer (a scan?): run it through OCR first.`);
    return chunks;
  }
  if (source.body.length > maxDocumentTextBytes) throw new DocumentFailure('TOO_LARGE', `The document is larger than ${maxDocumentTextBytes} bytes of text.`);
  const parsed = await parseText(source.format, source.body.toString('utf8'));
  if (!parsed.trim()) throw new DocumentFailure('NO_TEXT', 'The document has no text.');
  const chunks = chunkText(parsed, store.config.chunking, source.format !== 'text');
  if (chunks.length === 0) throw new DocumentFailure('NO_TEXT', 'The document has no text.');
  return chunks;
}

/**
 * How long reading a PDF's text may take: half the function's 120 s, leaving the rest to embed and write, so that a
 * PDF of many pages fails TOO_LARGE in time instead of timing out its invocation again and again.
 */
const pdfReadingMs = 60_000;

async function readPdf(body: Buffer): Promise<string[]> {
  try {
    return await pdfPageTexts(body, { maxPages: maxPdfPages, maxTextBytes: maxDocumentTextBytes, deadline: Date.now() + pdfReadingMs });
  } catch (error) {
    if (error instanceof PdfLimitError) throw new DocumentFailure('TOO_LARGE', error.message, { cause: error });
    throw new DocumentFailure('PARSE_ERROR', `The PDF could not be read: ${(error as Error).message}`, { cause: error });
  }
}

async function writeVectors(deps: KnowledgeDeps, store: StoredKnowledgeStore, document: StoredDocument, chunks: TextChunk[]): Promise<number> {
  const model = deps.embeddingModel(store.embedder);
  if (!model) throw new DocumentFailure('EMBEDDING_FAILED', `The embedding model ${store.embedder.modelId} is not available.`);
  let embeddings: number[][];
  try {
    ({ embeddings } = await embedMany({ model, values: chunks.map(indexedText), maxParallelCalls: embeddingParallelism, maxRetries: 2 }));
  } catch (error) {
    throw new DocumentFailure('EMBEDDING_FAILED', 'The embedding model failed; upload the document again.', { cause: error });
  }
  await deps.vectors.createIndex({ name: store.indexName, dimension: embeddings[0]!.length, nonFilterableMetadataKeys: nonFilterableChunkKeys });
  const records = chunks.map((chunk, index) => ({
    key: chunkKey(document.id, document.version, chunk.index),
    data: embeddings[index]!,
    metadata: {
      documentId: document.id,
      version: document.version,
      documentName: document.name,
      text: chunk.text,
      headingPath: chunk.headingPath,
      ...(chunk.page === undefined ? {} : { page: chunk.page }),
    },
  }));
  for (let start = 0; start < records.length; start += vectorLimits.maxVectorsPerWrite) {
    await deps.vectors.putVectors(store.indexName, records.slice(start, start + vectorLimits.maxVectorsPerWrite));
  }
  return chunks.length;
}

/** A URL document's page; only 2xx answers in a format we read, within the size limit, are taken. */
async function fetchDocument(deps: KnowledgeDeps, url: string): Promise<DocumentSource> {
  let response: GuardedResponse;
  try {
    response = await guardedRequest(
      new URL(url),
      { method: 'GET', headers: { accept: 'text/html, text/markdown, application/pdf, text/plain;q=0.9', 'user-agent': 'agent-platform-knowledge/1' }, timeoutMs: fetchTimeoutMs, maxResponseBytes: maxDocumentFileBytes },
      egressPolicyFromConfig(deps.config),
    );
  } catch (error) {
    throw new DocumentFailure('FETCH_FAILED', `${url} could not be fetched: ${(error as Error).message}`, { cause: error });
  }
  if (response.status < 200 || response.status >= 300) throw new DocumentFailure('FETCH_FAILED', `${url} answered ${response.status} (redirects are not followed).`);
  if (response.truncated) throw new DocumentFailure('TOO_LARGE', `${url} is larger than ${maxDocumentFileBytes} bytes.`);
  const mediaType = String(response.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  const format = formatByMediaType[mediaType];
  if (!format) throw new DocumentFailure('UNSUPPORTED_TYPE', `${url} is ${mediaType || 'of no declared type'}; HTML, Markdown, PDF and plain text are read.`);
  return { body: response.body, format };
}

const fetchTimeoutMs = 10_000;
const formatByMediaType: Record<string, DocumentFormat> = {
  'text/html': 'html',
  'application/xhtml+xml': 'html',
  'text/markdown': 'markdown',
  'text/x-markdown': 'markdown',
  'text/plain': 'text',
  'application/pdf': 'pdf',
};

/**
 * The document's text to chunk: Markdown and plain text as they are, HTML reduced to its readable part. The HTML
 * reader (linkedom, Readability: 400 KB) is loaded with the first HTML document.
 */
async function parseText(format: DocumentFormat, text: string): Promise<string> {
  if (format !== 'html') return text;
  const { htmlToMarkdown } = await import('./html-to-markdown.ts');
  try {
    return htmlToMarkdown(text) ?? '';
  } catch (error) {
    throw new DocumentFailure('PARSE_ERROR', 'The HTML could not be read.', { cause: error });
  }
}

async function retireSuperseded(deps: KnowledgeDeps, store: StoredKnowledgeStore, document: StoredDocument): Promise<void> {
  if (!document.retired) return;
  await deleteVersionVectors(deps.vectors, store.indexName, document.id, document.retired.version, document.retired.chunkCount);
  await deps.knowledge.clearRetired(document);
}

async function deleteStoreContents(deps: KnowledgeDeps, message: Extract<IngestionMessage, { kind: 'store.delete' }>): Promise<IngestionOutcome> {
  // Queued before the store's delete: while the store still exists, the delete may yet be refused; try later.
  if (await deps.knowledge.getStore(message.orgId, message.storeId)) throw new Error(`Knowledge store ${message.storeId} still exists; its clean-up waits.`);
  await deps.vectors.deleteIndex(message.indexName);
  await deps.snapshots.deleteAll(message.indexName);
  await deps.knowledge.deleteStoreContents(message.orgId, message.storeId);
  return 'store-deleted';
}
