import {
  ConditionalCheckFailedException,
  DynamoDBClient,
  TransactionCanceledException,
} from '@aws-sdk/client-dynamodb';
import { BatchWriteCommand, DynamoDBDocumentClient, PutCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { Config } from '../config.ts';
import { traceAwsClient } from '../tracing.ts';
import { accountDynamoDbRequests } from '../cost-accounting.ts';

/** One document client per process; on DynamoDB Local the endpoint and placeholder credentials come from config. */
export function createDocumentClient(config: Pick<Config, 'AWS_REGION' | 'DYNAMODB_ENDPOINT'>): DynamoDBDocumentClient {
  const client = traceAwsClient(
    new DynamoDBClient({
    region: config.AWS_REGION,
    // Measured per call: less CPU than the defaults. The regional endpoint needs no account id, and sockets are
    // kept alive with room for a busy function's parallel calls.
    accountIdEndpointMode: 'disabled',
    requestHandler: { httpAgent: new HttpAgent({ keepAlive: true, maxSockets: 64 }), httpsAgent: new HttpsAgent({ keepAlive: true, maxSockets: 64 }) },
    ...(config.DYNAMODB_ENDPOINT
      ? { endpoint: config.DYNAMODB_ENDPOINT, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }
      : {}),
    }),
  );
  askConsumedCapacity(client);
  accountDynamoDbRequests(client);
  return DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
  });
}

/** The operations that report the capacity they consume when asked (ReturnConsumedCapacity). */
const capacityOperations = new Set(['GetItem', 'BatchGetItem', 'Query', 'Scan', 'TransactGetItems', 'PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem', 'TransactWriteItems']);

/**
 * Every read and write asks DynamoDB for the capacity it consumes (`TOTAL`), on AWS as locally (decision 400): the
 * answer costs nothing, and whatever reads the responses (the bench's counting proxy, its cost accounting) sees
 * the units a request was billed without each call site asking. A caller's own setting (`INDEXES`) is kept.
 */
export function askConsumedCapacity(client: DynamoDBClient): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as Record<string, unknown>;
      if (capacityOperations.has((context.commandName ?? '').replace(/Command$/, ''))) input.ReturnConsumedCapacity ??= 'TOTAL';
      return next(args);
    },
    { step: 'initialize', name: 'askConsumedCapacity' },
  );
}

/** True when a write failed because its condition did not hold. */
export function isConditionFailure(error: unknown): boolean {
  return error instanceof ConditionalCheckFailedException;
}

/** Awaits a conditional write: true when it was applied, false when its condition did not hold. */
export async function conditionalWrite(write: Promise<unknown>): Promise<boolean> {
  try {
    await write;
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}

/** Replaces an item only if it is still the version read (`updatedAt`): false when another write came first. */
export function putIfUnchanged(client: DynamoDBDocumentClient, tableName: string, item: Record<string, unknown>, seenUpdatedAt: string): Promise<boolean> {
  return conditionalWrite(
    client.send(new PutCommand({ TableName: tableName, Item: item, ConditionExpression: 'updatedAt = :seen', ExpressionAttributeValues: { ':seen': seenUpdatedAt } })),
  );
}

/** The per-item cancellation reasons of a failed transaction, or undefined when it failed for another cause. */
export function transactionCancellationCodes(error: unknown): (string | undefined)[] | undefined {
  if (!(error instanceof TransactionCanceledException)) return undefined;
  return (error.CancellationReasons ?? []).map((reason) => (reason.Code === 'None' ? undefined : reason.Code));
}

/** One item of a TransactWriteItems request. */
export type TransactItem = NonNullable<ConstructorParameters<typeof TransactWriteCommand>[0]['TransactItems']>[number];

const transactionAttempts = 4;

/**
 * Writes the items in one transaction. Transactions that touch one item at the same moment (a shared counter)
 * cancel each other with TransactionConflict, which the SDK does not retry: this does, with jitter, a few times.
 */
export async function sendTransaction(client: DynamoDBDocumentClient, items: TransactItem[]): Promise<void> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      await client.send(new TransactWriteCommand({ TransactItems: items }));
      return;
    } catch (error) {
      const codes = transactionCancellationCodes(error);
      const conflictOnly = codes?.includes('TransactionConflict') && !codes.includes('ConditionalCheckFailed');
      if (!conflictOnly || attempt === transactionAttempts) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 25 * 2 ** attempt));
    }
  }
}

/** BatchWriteItem's limit on the requests of one call. */
export const maxItemsPerBatchWrite = 25;
const maxBatchWriteRounds = 6;

/**
 * Puts the items with BatchWriteItem, 25 a request, one request after another, writing again what DynamoDB left
 * unprocessed after a backoff; fails when some are still unwritten after a few rounds. Unconditional: for items a
 * second write of leaves as they were.
 */
export async function putAll(client: DynamoDBDocumentClient, tableName: string, items: readonly Record<string, unknown>[]): Promise<void> {
  for (let start = 0; start < items.length; start += maxItemsPerBatchWrite) {
    let requests: Record<string, unknown>[] = items.slice(start, start + maxItemsPerBatchWrite).map((Item) => ({ PutRequest: { Item } }));
    for (let round = 0; requests.length > 0; round += 1) {
      if (round === maxBatchWriteRounds) throw new Error(`DynamoDB left ${requests.length} item(s) unwritten`);
      if (round > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(1_000, 25 * 2 ** round)));
      const result = await client.send(new BatchWriteCommand({ RequestItems: { [tableName]: requests } }));
      requests = (result.UnprocessedItems?.[tableName] ?? []) as Record<string, unknown>[];
    }
  }
}
