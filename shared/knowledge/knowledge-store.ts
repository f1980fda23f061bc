import { createHash } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { DeleteCommand, GetCommand, QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { DomainEvent } from '../events/events.ts';
import type { IdempotencyCompletion } from '../platform/ports.ts';
import type { DocumentErrorCode, DocumentFormat, KnowledgeDocument, KnowledgeStore } from './knowledge-schemas.ts';
import { conditionalWrite, isConditionFailure, sendTransaction, transactionCancellationCodes, type TransactItem } from '../platform/store/dynamo.ts';
import { transactWithCompletion } from '../platform/store/idempotency-store.ts';
import { keys } from '../platform/store/keys.ts';
import { queryAll } from '../platform/store/query-all.ts';

const outboxRetentionSeconds = 7 * 24 * 60 * 60;

/** A document that leaves PROCESSING leaves the sweeper's index. */
const leavesProcessing = 'gsi3pk, gsi3sk, processingDeadline';

export const knowledgeKeys = {
  store: (orgId: string, storeId: string) => ({ pk: `ORG#${orgId}`, sk: `KSTORE#${storeId}` }),
  storePrefix: 'KSTORE#',
  storePartition: (orgId: string, storeId: string) => `ORG#${orgId}#KS#${storeId}`,
  document: (orgId: string, storeId: string, documentId: string) => ({ pk: `ORG#${orgId}#KS#${storeId}`, sk: `DOC#${documentId}` }),
  documentPrefix: 'DOC#',
  /**
   * Makes names unique within a store: a document posted again under its name is a new version of the same one.
   * Keyed by a digest of the lower-cased name: a name of 300 multi-byte characters would overflow a sort key's 1,024 bytes.
   */
  documentName: (orgId: string, storeId: string, name: string) => ({ pk: `ORG#${orgId}#KS#${storeId}`, sk: `DOCNAME#${createHash('sha256').update(name.toLowerCase()).digest('base64url')}` }),
  /**
   * The sparse index of documents PROCESSING, by deadline, for the sweeper: one partition for the deployment (a
   * document is in it for seconds to minutes, so it stays small), the sort key starting with the deadline.
   */
  processing: (deadline: string, orgId: string, storeId: string, documentId: string) => ({ gsi3pk: 'KNOWLEDGE#PROCESSING', gsi3sk: `${deadline}#${orgId}#${storeId}#${documentId}` }),
  processingPartition: 'KNOWLEDGE#PROCESSING',
};

/** A store as kept: the record plus the bookkeeping retrieval needs. */
export interface StoredKnowledgeStore extends KnowledgeStore {
  /** The vector index (S3 Vectors index, local index file) holding its chunks. */
  indexName: string;
  /** Bumped whenever the set of chunks that answer changes: retrieval caches are keyed by it. */
  revision: number;
  /** While a re-index runs: the vector index it builds, which replaces `indexName` when done. */
  reindexIndexName?: string | undefined;
}

/** A document as kept: the chunks of a superseded version are deleted after the new one is live. */
export interface StoredDocument extends KnowledgeDocument {
  orgId: string;
  activeChunkCount: number;
  activeBytes: number;
  retired?: { version: number; chunkCount: number } | undefined;
  /** While PROCESSING: when the sweeper fails it with TIMEOUT (an upload's window, then the processing limit). */
  processingDeadline?: string | undefined;
}

const storeFields = ['id', 'orgId', 'name', 'description', 'config', 'counts', 'embedder', 'reindexing', 'createdAt', 'updatedAt'] as const;
const documentFields = ['id', 'knowledgeStoreId', 'name', 'format', 'url', 'status', 'version', 'activeVersion', 'bytes', 'chunkCount', 'error', 'createdAt', 'updatedAt'] as const;

function pick<T>(item: Record<string, unknown>, fields: readonly string[]): T {
  return Object.fromEntries(fields.filter((field) => item[field] !== undefined).map((field) => [field, item[field]])) as T;
}

export const publicStore = (store: KnowledgeStore): KnowledgeStore => pick(store as unknown as Record<string, unknown>, storeFields);
export const publicDocument = (document: KnowledgeDocument): KnowledgeDocument => pick(document as unknown as Record<string, unknown>, documentFields);

const toStoredStore = (item: Record<string, unknown>): StoredKnowledgeStore => ({
  ...pick<KnowledgeStore>(item, storeFields),
  // Stores made before embedders were recorded were all built by the built-in one.
  embedder: (item.embedder as KnowledgeStore['embedder'] | undefined) ?? { modelId: 'builtin/hashed-ngrams-256', dimensions: 256 },
  indexName: item.indexName as string,
  revision: Number(item.revision ?? 0),
  reindexIndexName: item.reindexIndexName as string | undefined,
});

const toStoredDocument = (item: Record<string, unknown>): StoredDocument => ({
  ...pick<KnowledgeDocument>(item, documentFields),
  orgId: item.orgId as string,
  activeChunkCount: Number(item.activeChunkCount ?? 0),
  activeBytes: Number(item.activeBytes ?? 0),
  retired: item.retired as StoredDocument['retired'],
  processingDeadline: item.processingDeadline as string | undefined,
});

export interface DocumentOutcome {
  status: 'UPSERTED' | 'FAILED';
  chunkCount: number;
  error?: { code: DocumentErrorCode; message: string } | undefined;
  at: string;
  event: DomainEvent;
  /** The plan's `knowledge_chunks` quota (null: unlimited): an UPSERT that would take the organization past it is refused. */
  chunkQuota?: number | null | undefined;
}

/** `finished`; `moved-on` when the document changed meanwhile (nothing written); `over-quota` when the chunks would pass the quota. */
export type FinishResult = 'finished' | 'moved-on' | 'over-quota';

/**
 * Knowledge stores in their organization's partition; each store's documents (and their name claims) in a
 * partition of the store. A document's status change, the store's counts and the `knowledge_store.updated`
 * outbox record are written in one transaction.
 */
export class DynamoKnowledgeStore {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;

  constructor(client: DynamoDBDocumentClient, tableName: string) {
    this.client = client;
    this.tableName = tableName;
  }

  async createStore(store: StoredKnowledgeStore, completion?: IdempotencyCompletion): Promise<void> {
    await transactWithCompletion(
      this.client,
      this.tableName,
      [{ Put: { TableName: this.tableName, Item: { ...knowledgeKeys.store(store.orgId, store.id), entity: 'knowledgeStore', ...store }, ConditionExpression: 'attribute_not_exists(pk)' } }],
      completion,
    );
  }

  async getStore(orgId: string, storeId: string): Promise<StoredKnowledgeStore | undefined> {
    const result = await this.client.send(new GetCommand({ TableName: this.tableName, Key: knowledgeKeys.store(orgId, storeId), ConsistentRead: true }));
    return result.Item ? toStoredStore(result.Item) : undefined;
  }

  async listStores(orgId: string): Promise<StoredKnowledgeStore[]> {
    const items = await queryAll(this.client, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': `ORG#${orgId}`, ':prefix': knowledgeKeys.storePrefix },
      ConsistentRead: true,
    });
    return items.map(toStoredStore);
  }

  /** Writes the changed settings if the store is still as read (`updatedAt` is its version). */
  async updateStore(previous: StoredKnowledgeStore, next: StoredKnowledgeStore): Promise<boolean> {
    const sets = ['#name = :name', 'config = :config', 'updatedAt = :updatedAt'];
    const removals: string[] = [];
    if (next.description === undefined) removals.push('description');
    else sets.push('description = :description');
    if (next.reindexing === undefined) removals.push('reindexing', 'reindexIndexName');
    else sets.push('reindexing = :reindexing', 'reindexIndexName = :reindexIndexName');
    return conditionalWrite(
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: knowledgeKeys.store(next.orgId, next.id),
          UpdateExpression: `SET ${sets.join(', ')} REMOVE ${removals.join(', ')}`.replace(/ REMOVE $/, ''),
          ConditionExpression: 'updatedAt = :previous',
          ExpressionAttributeNames: { '#name': 'name' },
          ExpressionAttributeValues: {
            ':name': next.name,
            ':config': next.config,
            ':updatedAt': next.updatedAt,
            ':previous': previous.updatedAt,
            ...(next.description === undefined ? {} : { ':description': next.description }),
            ...(next.reindexing === undefined ? {} : { ':reindexing': next.reindexing, ':reindexIndexName': next.reindexIndexName }),
          },
        }),
      ),
    );
  }

  /**
   * Ends a re-index: the new index and its embedder answer from now on (revision + 1), if the store's chunks did
   * not change while it was built (same revision) and the re-index is still the one asked for.
   */
  async finishReindex(store: StoredKnowledgeStore, at: string): Promise<boolean> {
    return conditionalWrite(
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: knowledgeKeys.store(store.orgId, store.id),
          UpdateExpression: 'SET embedder = :embedder, indexName = :indexName, updatedAt = :at ADD revision :one REMOVE reindexing, reindexIndexName',
          ConditionExpression: 'revision = :revision AND reindexIndexName = :indexName',
          ExpressionAttributeValues: { ':embedder': store.reindexing, ':indexName': store.reindexIndexName, ':at': at, ':one': 1, ':revision': store.revision },
        }),
      ),
    );
  }

  /**
   * Deletes the store as read, releasing its chunks from the organization's stock in the same transaction; false
   * when it is gone or changed meanwhile (a document finished: its `revision` moved), to be read again.
   */
  async deleteStore(store: StoredKnowledgeStore, at: string): Promise<boolean> {
    const items: TransactItem[] = [
      {
        Delete: {
          TableName: this.tableName,
          Key: knowledgeKeys.store(store.orgId, store.id),
          ConditionExpression: 'revision = :revision',
          ExpressionAttributeValues: { ':revision': store.revision },
        },
      },
      ...this.chunkStockChange(store.orgId, -store.counts.chunks, at),
    ];
    try {
      await sendTransaction(this.client, items);
      return true;
    } catch (error) {
      if (transactionCancellationCodes(error)?.[0] === 'ConditionalCheckFailed') return false;
      throw error;
    }
  }

  /** The store's documents and name claims, for the clean-up after the store was deleted. */
  async deleteStoreContents(orgId: string, storeId: string): Promise<number> {
    const items = await queryAll(this.client, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': knowledgeKeys.storePartition(orgId, storeId) },
      ProjectionExpression: 'pk, sk',
    });
    for (const item of items) await this.client.send(new DeleteCommand({ TableName: this.tableName, Key: { pk: item.pk, sk: item.sk } }));
    return items.length;
  }

  async getDocument(orgId: string, storeId: string, documentId: string): Promise<StoredDocument | undefined> {
    const result = await this.client.send(new GetCommand({ TableName: this.tableName, Key: knowledgeKeys.document(orgId, storeId, documentId), ConsistentRead: true }));
    return result.Item ? toStoredDocument(result.Item) : undefined;
  }

  async listDocuments(orgId: string, storeId: string): Promise<StoredDocument[]> {
    const items = await queryAll(this.client, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': knowledgeKeys.storePartition(orgId, storeId), ':prefix': knowledgeKeys.documentPrefix },
      ConsistentRead: true,
    });
    return items.map(toStoredDocument);
  }

  /**
   * A new document, or a new version of the document of that name: PROCESSING at `version`, while the chunks of
   * the version that answers now keep answering. Returns the document as written.
   */
  async submitDocument(input: {
    orgId: string;
    storeId: string;
    newId: string;
    name: string;
    format?: DocumentFormat | undefined;
    url?: string | undefined;
    bytes: number;
    at: string;
    /** When the sweeper fails it if it is still PROCESSING; without one only a read does (the read-time check). */
    processingDeadline?: string | undefined;
  }): Promise<StoredDocument> {
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const claim = await this.client.send(
        new GetCommand({ TableName: this.tableName, Key: knowledgeKeys.documentName(input.orgId, input.storeId, input.name), ConsistentRead: true }),
      );
      const existing = claim.Item ? await this.getDocument(input.orgId, input.storeId, claim.Item.documentId as string) : undefined;
      const document: StoredDocument = existing
        ? {
            ...existing,
            name: input.name,
            format: input.format,
            url: input.url,
            status: 'PROCESSING',
            version: existing.version + 1,
            bytes: input.bytes,
            chunkCount: 0,
            error: undefined,
            updatedAt: input.at,
            processingDeadline: input.processingDeadline,
          }
        : {
            id: input.newId,
            orgId: input.orgId,
            knowledgeStoreId: input.storeId,
            name: input.name,
            format: input.format,
            url: input.url,
            status: 'PROCESSING',
            version: 1,
            bytes: input.bytes,
            chunkCount: 0,
            activeChunkCount: 0,
            activeBytes: 0,
            createdAt: input.at,
            updatedAt: input.at,
            processingDeadline: input.processingDeadline,
          };
      const item = Object.fromEntries(Object.entries(document).filter(([field, value]) => value !== undefined && field !== 'error'));
      const items: TransactItem[] = [
        {
          Put: {
            TableName: this.tableName,
            Item: {
              ...knowledgeKeys.document(input.orgId, input.storeId, document.id),
              ...(input.processingDeadline ? knowledgeKeys.processing(input.processingDeadline, input.orgId, input.storeId, document.id) : {}),
              entity: 'knowledgeDocument',
              ...item,
            },
            ...(existing
              ? { ConditionExpression: 'version = :previous', ExpressionAttributeValues: { ':previous': existing.version } }
              : { ConditionExpression: 'attribute_not_exists(pk)' }),
          },
        },
        {
          Put: {
            TableName: this.tableName,
            Item: { ...knowledgeKeys.documentName(input.orgId, input.storeId, input.name), entity: 'knowledgeDocumentName', documentId: document.id },
            ...(existing ? {} : { ConditionExpression: 'attribute_not_exists(pk)' }),
          },
        },
      ];
      try {
        await sendTransaction(this.client, items);
        return document;
      } catch (error) {
        // Another upload of the same name got there first: take its result as the version to supersede.
        if (!transactionCancellationCodes(error)?.includes('ConditionalCheckFailed')) throw error;
      }
    }
    throw new Error('The document kept changing while it was being submitted.');
  }

  /**
   * Ends the processing of `version`: UPSERTED makes its chunks the ones that answer (the previous version's are
   * noted as retired, to be deleted), FAILED leaves the previous version answering. False when the document moved
   * on meanwhile (a newer version, a deletion, the sweeper): then nothing is written.
   */
  async finishDocument(document: StoredDocument, outcome: DocumentOutcome): Promise<FinishResult> {
    const key = knowledgeKeys.document(document.orgId, document.knowledgeStoreId, document.id);
    const upserted = outcome.status === 'UPSERTED';
    const documentUpdate: TransactItem = {
      Update: {
        TableName: this.tableName,
        Key: key,
        UpdateExpression: upserted
          ? `SET #status = :status, chunkCount = :chunks, activeVersion = :version, activeChunkCount = :chunks, bytes = :bytes, activeBytes = :bytes, #format = :format, updatedAt = :at, retired = :retired REMOVE #error, ${leavesProcessing}`
          : `SET #status = :status, chunkCount = :zero, #error = :error, updatedAt = :at REMOVE ${leavesProcessing}`,
        ConditionExpression: 'version = :version AND #status = :processing',
        ExpressionAttributeNames: { '#status': 'status', '#error': 'error', ...(upserted ? { '#format': 'format' } : {}) },
        ExpressionAttributeValues: {
          ':status': outcome.status,
          ':version': document.version,
          ':processing': 'PROCESSING',
          ':at': outcome.at,
          ...(upserted
            ? {
                ':chunks': outcome.chunkCount,
                ':bytes': document.bytes,
                ':format': document.format ?? 'text',
                ':retired': document.activeVersion === undefined ? null : { version: document.activeVersion, chunkCount: document.activeChunkCount },
              }
            : { ':zero': 0, ':error': outcome.error }),
        },
      },
    };
    const items: TransactItem[] = [documentUpdate, this.outboxPut(document, outcome.event)];
    const stockChange = upserted ? this.chunkStockChange(document.orgId, outcome.chunkCount - document.activeChunkCount, outcome.at, outcome.chunkQuota) : [];
    if (upserted) {
      items.push({
        Update: {
          TableName: this.tableName,
          Key: knowledgeKeys.store(document.orgId, document.knowledgeStoreId),
          UpdateExpression: 'ADD counts.documents :documents, counts.chunks :chunks, counts.bytes :bytes, revision :one',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeValues: {
            ':documents': document.activeVersion === undefined ? 1 : 0,
            ':chunks': outcome.chunkCount - document.activeChunkCount,
            ':bytes': document.bytes - document.activeBytes,
            ':one': 1,
          },
        },
      });
    }
    items.push(...stockChange);
    try {
      await sendTransaction(this.client, items);
      return 'finished';
    } catch (error) {
      const codes = transactionCancellationCodes(error);
      if (codes?.[0] === 'ConditionalCheckFailed' || codes?.[2] === 'ConditionalCheckFailed') return 'moved-on';
      if (codes?.[3] === 'ConditionalCheckFailed') return 'over-quota';
      throw error;
    }
  }

  /**
   * The organization's stock of chunks moves by `delta` (`ADD` on its usage stock item), with a change record whose
   * INSERT the usage meter rolls up into `usage.updated`, kept for the usage series (the stock at a bucket's end is
   * the stock now less the changes since). Growing past `quota` fails the transaction on this item.
   */
  private chunkStockChange(orgId: string, delta: number, at: string, quota?: number | null): TransactItem[] {
    if (delta === 0) return [];
    const capped = delta > 0 && quota !== undefined && quota !== null;
    return [
      {
        Update: {
          TableName: this.tableName,
          Key: keys.usageStock(orgId),
          UpdateExpression: 'SET entity = :entity ADD knowledge_chunks :delta',
          ...(capped ? { ConditionExpression: 'attribute_not_exists(knowledge_chunks) OR knowledge_chunks <= :room' } : {}),
          ExpressionAttributeValues: { ':entity': 'usageStock', ':delta': delta, ...(capped ? { ':room': quota - delta } : {}) },
        },
      },
      {
        Put: {
          TableName: this.tableName,
          Item: {
            ...keys.usageStockChange(orgId, at, uuidv7()),
            entity: 'usageStockChange',
            metric: 'knowledge_chunks',
            delta,
            at,
          },
        },
      },
    ];
  }

  /** Documents PROCESSING whose deadline is before `before`, oldest deadline first (an eventually consistent read). */
  async listOverdueDocuments(before: string, limit: number): Promise<StoredDocument[]> {
    const result = await this.client.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: 'gsi3',
        KeyConditionExpression: 'gsi3pk = :pk AND gsi3sk < :before',
        ExpressionAttributeValues: { ':pk': knowledgeKeys.processingPartition, ':before': before },
        Limit: limit,
      }),
    );
    return (result.Items ?? []).map(toStoredDocument);
  }

  /** Forgets the retired version once its vectors are deleted. */
  async clearRetired(document: StoredDocument): Promise<void> {
    await conditionalWrite(
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: knowledgeKeys.document(document.orgId, document.knowledgeStoreId, document.id),
          UpdateExpression: 'REMOVE retired',
          ConditionExpression: 'version = :version',
          ExpressionAttributeValues: { ':version': document.version },
        }),
      ),
    );
  }

  /** Deletes the document and its name claim, taking its chunks out of the store's counts and the organization's stock. */
  async deleteDocument(document: StoredDocument, at: string): Promise<boolean> {
    const items: TransactItem[] = [
      {
        Delete: {
          TableName: this.tableName,
          Key: knowledgeKeys.document(document.orgId, document.knowledgeStoreId, document.id),
          ConditionExpression: 'version = :version',
          ExpressionAttributeValues: { ':version': document.version },
        },
      },
      { Delete: { TableName: this.tableName, Key: knowledgeKeys.documentName(document.orgId, document.knowledgeStoreId, document.name) } },
    ];
    if (document.activeVersion !== undefined) {
      items.push({
        Update: {
          TableName: this.tableName,
          Key: knowledgeKeys.store(document.orgId, document.knowledgeStoreId),
          UpdateExpression: 'ADD counts.documents :minusOne, counts.chunks :chunks, counts.bytes :bytes, revision :one',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeValues: { ':minusOne': -1, ':chunks': -document.activeChunkCount, ':bytes': -document.activeBytes, ':one': 1 },
        },
      });
      items.push(...this.chunkStockChange(document.orgId, -document.activeChunkCount, at));
    }
    try {
      await sendTransaction(this.client, items);
      return true;
    } catch (error) {
      if (transactionCancellationCodes(error)?.includes('ConditionalCheckFailed') || isConditionFailure(error)) return false;
      throw error;
    }
  }

  private outboxPut(document: StoredDocument, event: DomainEvent): TransactItem {
    return {
      Put: {
        TableName: this.tableName,
        Item: {
          pk: knowledgeKeys.storePartition(document.orgId, document.knowledgeStoreId),
          sk: `OUTBOX#${event.eventId}`,
          entity: 'outbox',
          ...event,
          expiresAt: Math.floor(Date.parse(event.createdAt) / 1000) + outboxRetentionSeconds,
        },
      },
    };
  }
}
