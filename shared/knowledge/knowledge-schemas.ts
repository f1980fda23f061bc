import * as z from 'zod';
import { optionalText, paginationQuery, requiredText, sortQuery, timestamp } from '../platform/schemas/common.ts';

/** What a document may weigh once parsed into text (docs/knowledge.md#limits). */
export const maxDocumentTextBytes = 2 * 1024 * 1024;
/** Pages of a PDF read at most: a PDF of more fails TOO_LARGE before its text is read. */
export const maxPdfPages = 2_000;

/** What a document's file may weigh: an upload (the presigned POST's content-length-range) or a fetched URL. */
export const maxDocumentFileBytes = 50 * 1024 * 1024;

const chunkingConfig = z
  .object({
    /** Target chunk size in tokens (≈ 4 characters each). */
    size: z.number().int().min(50).max(2000).default(400),
    /** Tokens repeated from the end of one chunk at the start of the next. */
    overlap: z.number().int().min(0).max(500).default(60),
  })
  .refine((chunking) => chunking.overlap < chunking.size, { error: 'overlap must be smaller than size', path: ['overlap'] });

/** `model`: `provider/name` of a RERANK model of the catalog; the built-in lexical reranker when absent. */
const rerankConfig = z.object({ enabled: z.boolean().default(false), model: z.string().trim().min(1).max(200).optional() });

export const knowledgeStoreConfig = z.object({
  topK: z.number().int().min(1).max(20).default(2),
  rerank: rerankConfig.default({ enabled: false }),
  chunking: chunkingConfig.default({ size: 400, overlap: 60 }),
  /** `provider/name` of an EMBEDDING model of the catalog (`GET /v1/chat/models?type=EMBEDDING`). */
  embeddingModelId: z.string().trim().min(1).max(200).default('builtin/hashed-words-512'),
  /** The vectors' size: 256, 512 or 1024 for Titan v2 (default 1024); required for OpenAI-compatible models; fixed for the built-in ones. */
  embeddingDimensions: z.number().int().min(1).max(4096).optional(),
  /** Chunks scoring below this (fused score, 0–1 scale of the vector similarity) are left out. */
  minScore: z.number().min(0).max(1).optional(),
});
export type KnowledgeStoreConfig = z.output<typeof knowledgeStoreConfig>;

export const createKnowledgeStoreBody = z.strictObject({
  name: requiredText(200),
  description: optionalText(2000).optional(),
  config: knowledgeStoreConfig.default(knowledgeStoreConfig.parse({})),
});
export type CreateKnowledgeStoreInput = z.output<typeof createKnowledgeStoreBody>;

export const updateKnowledgeStoreBody = z
  .strictObject({
    name: requiredText(200).optional(),
    description: optionalText(2000).nullable().optional(),
    config: z
      .strictObject({
        topK: z.number().int().min(1).max(20).optional(),
        rerank: rerankConfig.optional(),
        /** Another embedder re-indexes the store: its vectors are rebuilt with it, while the current ones keep answering. */
        embeddingModelId: z.string().trim().min(1).max(200).optional(),
        embeddingDimensions: z.number().int().min(1).max(4096).optional(),
        minScore: z.number().min(0).max(1).nullable().optional(),
      })
      .optional(),
  })
  .refine((body) => Object.keys(body).length > 0, { error: 'give at least one field to change' });
export type UpdateKnowledgeStoreInput = z.output<typeof updateKnowledgeStoreBody>;

export const listKnowledgeStoresQuery = paginationQuery.extend({
  name: z.string().trim().min(1).max(200).optional(),
  sort: sortQuery(['createdAt', 'updatedAt', 'name'], 'createdAt:desc'),
});
export type ListKnowledgeStoresQuery = z.output<typeof listKnowledgeStoresQuery>;

export const knowledgeStoreSchema = z.object({
  id: z.string(),
  orgId: z.string(),
  name: z.string(),
  description: z.string().optional(),
  config: knowledgeStoreConfig,
  counts: z.object({ documents: z.number().int(), chunks: z.number().int(), bytes: z.number().int() }),
  /** The embedder that built the store's vectors; queries embed with it. */
  embedder: z.object({ modelId: z.string(), dimensions: z.number().int() }),
  /** While a re-index runs: the embedder it rebuilds the vectors with (`embedder` answers until it is done). */
  reindexing: z.object({ modelId: z.string(), dimensions: z.number().int() }).optional(),
  createdAt: timestamp,
  updatedAt: timestamp,
});
export type KnowledgeStore = z.output<typeof knowledgeStoreSchema>;

export const documentStatuses = ['PROCESSING', 'UPSERTED', 'FAILED'] as const;
export type DocumentStatus = (typeof documentStatuses)[number];

export const documentErrorCodes = ['UNSUPPORTED_TYPE', 'TOO_LARGE', 'NO_TEXT', 'PARSE_ERROR', 'FETCH_FAILED', 'EMBEDDING_FAILED', 'TIMEOUT', 'QUOTA_EXCEEDED'] as const;
export type DocumentErrorCode = (typeof documentErrorCodes)[number];

export const documentFormats = ['text', 'markdown', 'html', 'pdf'] as const;
export type DocumentFormat = (typeof documentFormats)[number];

/** The formats a JSON body can carry as `text`; a PDF comes as a URL or an upload. */
export const textFormats = ['text', 'markdown', 'html'] as const;

const inlineDocumentBody = z.strictObject({
  name: requiredText(300),
  text: z.string().max(maxDocumentTextBytes, { error: `must be at most ${maxDocumentTextBytes} characters` }),
  /** Markdown unless told: plain text chunks the same way, without headings; HTML is reduced to its readable part. */
  format: z.enum(textFormats).default('markdown'),
});

/** A page fetched through the egress guard at ingestion; its format follows its Content-Type. */
const urlDocumentBody = z.strictObject({
  name: requiredText(300),
  url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).max(2048),
});

export const createDocumentBody = z.union([inlineDocumentBody, urlDocumentBody], { error: 'give {name, text} or {name, url}' });
export type CreateDocumentInput = z.output<typeof createDocumentBody>;

export const documentSchema = z.object({
  id: z.string(),
  knowledgeStoreId: z.string(),
  name: z.string(),
  /** Known once the document's content is: at once for text, after the fetch for a URL. */
  format: z.enum(documentFormats).optional(),
  url: z.string().optional(),
  status: z.enum(documentStatuses),
  /** The version being built (PROCESSING) or shown; the chunks of `activeVersion` answer queries meanwhile. */
  version: z.number().int(),
  activeVersion: z.number().int().optional(),
  bytes: z.number().int(),
  chunkCount: z.number().int(),
  error: z.object({ code: z.enum(documentErrorCodes), message: z.string() }).optional(),
  createdAt: timestamp,
  updatedAt: timestamp,
});
export type KnowledgeDocument = z.output<typeof documentSchema>;

export const createDocumentUploadBody = z.strictObject({
  name: requiredText(300),
  /** The file's format; the upload must declare its media type (application/pdf, text/markdown, text/plain, text/html). */
  format: z.enum(documentFormats),
});
export type CreateDocumentUploadInput = z.output<typeof createDocumentUploadBody>;

export const documentUploadSchema = z.object({
  documentId: z.string(),
  /** The document (or its new version), PROCESSING until its file has arrived and been ingested. */
  document: documentSchema,
  /** A presigned S3 POST: send `fields`, then the file as the last field `file`, as multipart/form-data to `url`. */
  upload: z.object({
    url: z.string(),
    fields: z.record(z.string(), z.string()),
    /** The POST is refused after this. */
    expiresAt: timestamp,
    /** The largest file the POST accepts (its policy's content-length-range). */
    maxBytes: z.number().int(),
  }),
});
export type DocumentUpload = z.output<typeof documentUploadSchema>;

export const documentParams = z.object({ id: z.uuid({ error: 'must be a UUID' }), documentId: z.uuid({ error: 'must be a UUID' }) });

export const listDocumentsQuery = paginationQuery.extend({ status: z.enum(documentStatuses).optional() });
export type ListDocumentsQuery = z.output<typeof listDocumentsQuery>;

export const queryKnowledgeBody = z.strictObject({
  query: requiredText(4000),
  topK: z.number().int().min(1).max(20).optional(),
  rerank: z.boolean().optional(),
});
export type QueryKnowledgeInput = z.output<typeof queryKnowledgeBody>;

export const retrievedChunkSchema = z.object({
  documentId: z.string(),
  documentName: z.string(),
  chunkId: z.string(),
  text: z.string(),
  score: z.number(),
  headingPath: z.array(z.string()),
  page: z.number().int().min(1).optional().describe("A PDF document's page the chunk is from, counted from 1"),
});
export type RetrievedChunk = z.output<typeof retrievedChunkSchema>;

export const queryKnowledgeResponse = z.object({ data: z.array(retrievedChunkSchema) });

export const pageOf = <Item extends z.ZodType>(item: Item) =>
  z.object({ data: z.array(item), pagination: z.object({ page: z.number(), limit: z.number(), total: z.number(), totalPages: z.number() }) });
