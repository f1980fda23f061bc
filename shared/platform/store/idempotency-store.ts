import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes, randomUUID } from 'node:crypto';
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { IdempotencyInProgressError } from '../errors.ts';
import type { IdempotencyClaim, IdempotencyCompletion, IdempotencyStore, StoredResponse } from '../ports.ts';
import { conditionalWrite, sendTransaction, transactionCancellationCodes, type TransactItem } from './dynamo.ts';
import { keys } from './keys.ts';


/** How long an in-progress claim blocks the key before a crashed request's claim may be taken over. */
const inProgressLeaseSeconds = 60;

/**
 * Idempotency records, one item per organization and key, expiring by TTL. A conditional put claims the key,
 * so of two concurrent requests exactly one runs; reads also check the expiry because TTL deletion lags.
 *
 * A stored response can hold a secret (a new API key is shown once), so the item keeps only a hash of the
 * client's Idempotency-Key and the response encrypted with a key derived from it: replaying needs the
 * Idempotency-Key itself, which the table never holds.
 */
export class DynamoIdempotencyStore implements IdempotencyStore {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly ttlSeconds: number;
  private readonly now: () => number;

  constructor(client: DynamoDBDocumentClient, tableName: string, ttlSeconds: number, now: () => number = Date.now) {
    this.client = client;
    this.tableName = tableName;
    this.ttlSeconds = ttlSeconds;
    this.now = now;
  }

  async claim(orgId: string, key: string, fingerprint: string): Promise<IdempotencyClaim> {
    const nowSeconds = Math.floor(this.now() / 1000);
    const claimId = randomUUID();
    const claimed = await conditionalWrite(
      this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            ...keys.idempotency(orgId, keyDigest(key)),
            entity: 'idempotency',
            status: 'IN_PROGRESS',
            claimId,
            fingerprint,
            leaseExpiresAt: nowSeconds + inProgressLeaseSeconds,
            expiresAt: nowSeconds + this.ttlSeconds,
          },
          ConditionExpression:
            'attribute_not_exists(pk) OR expiresAt < :now OR (#status = :inProgress AND leaseExpiresAt < :now)',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':now': nowSeconds, ':inProgress': 'IN_PROGRESS' },
        }),
      ),
    );
    if (claimed) return { outcome: 'claimed', claimId };
    const existing = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: keys.idempotency(orgId, keyDigest(key)), ConsistentRead: true }),
    );
    const item = existing.Item;
    if (!item) return this.claim(orgId, key, fingerprint);
    if (item.fingerprint !== fingerprint) return { outcome: 'mismatch' };
    if (item.status === 'COMPLETED') return { outcome: 'replay', response: decrypt(item.response as string, orgId, key) };
    return { outcome: 'in-progress' };
  }

  async complete(orgId: string, key: string, response: StoredResponse): Promise<void> {
    await this.client.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: keys.idempotency(orgId, keyDigest(key)),
        UpdateExpression: 'SET #status = :completed, #response = :response REMOVE leaseExpiresAt',
        ExpressionAttributeNames: { '#status': 'status', '#response': 'response' },
        ExpressionAttributeValues: { ':completed': 'COMPLETED', ':response': encrypt(response, orgId, key) },
      }),
    );
  }

  seal(orgId: string, key: string, claimId: string, response: StoredResponse): IdempotencyCompletion {
    return { orgId, keyDigest: keyDigest(key), claimId, sealedResponse: encrypt(response, orgId, key) };
  }

  async release(orgId: string, key: string): Promise<void> {
    await this.client.send(new DeleteCommand({ TableName: this.tableName, Key: keys.idempotency(orgId, keyDigest(key)) }));
  }
}

/** The write that records an idempotent response, for the transaction that creates the resource (none without one). */
function completionWrites(tableName: string, completion: IdempotencyCompletion | undefined): TransactItem[] {
  if (!completion) return [];
  return [
    {
      Update: {
        TableName: tableName,
        Key: keys.idempotency(completion.orgId, completion.keyDigest),
        UpdateExpression: 'SET #status = :completed, #response = :response REMOVE leaseExpiresAt',
        ConditionExpression: '#status = :inProgress AND claimId = :claimId',
        ExpressionAttributeNames: { '#status': 'status', '#response': 'response' },
        ExpressionAttributeValues: {
          ':completed': 'COMPLETED',
          ':response': completion.sealedResponse,
          ':inProgress': 'IN_PROGRESS',
          ':claimId': completion.claimId,
        },
      },
    },
  ];
}

/**
 * Writes `items` and, last, the completion of the idempotent request that creates them, in one transaction. When
 * the claim no longer held its key (the request outlived its lease and another took the key over), nothing is
 * written and the answer is IdempotencyInProgressError; other failures reach the caller as they are.
 */
export async function transactWithCompletion(
  client: DynamoDBDocumentClient,
  tableName: string,
  items: TransactItem[],
  completion: IdempotencyCompletion | undefined,
): Promise<void> {
  try {
    await sendTransaction(client, [...items, ...completionWrites(tableName, completion)]);
  } catch (error) {
    if (completion && transactionCancellationCodes(error)?.at(-1) === 'ConditionalCheckFailed') {
      throw new IdempotencyInProgressError('Another request with this Idempotency-Key took it over while this one ran; retry to see its result.');
    }
    throw error;
  }
}

function keyDigest(idempotencyKey: string): string {
  return createHash('sha256').update(idempotencyKey).digest('base64url');
}

function responseKey(orgId: string, idempotencyKey: string): Buffer {
  return Buffer.from(hkdfSync('sha256', idempotencyKey, orgId, 'idempotent-response', 32));
}

/** AES-256-GCM; the stored string is base64url of iv, tag and ciphertext. */
function encrypt(response: StoredResponse, orgId: string, idempotencyKey: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', responseKey(orgId, idempotencyKey), iv);
  const body = Buffer.concat([cipher.update(JSON.stringify(response), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
}

function decrypt(stored: string, orgId: string, idempotencyKey: string): StoredResponse {
  const bytes = Buffer.from(stored, 'base64url');
  const decipher = createDecipheriv('aes-256-gcm', responseKey(orgId, idempotencyKey), bytes.subarray(0, 12));
  decipher.setAuthTag(bytes.subarray(12, 28));
  return JSON.parse(Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString('utf8')) as StoredResponse;
}
