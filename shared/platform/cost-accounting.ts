import { AsyncLocalStorage } from 'node:async_hooks';
import { appendFileSync } from 'node:fs';
import { BatchGetItemCommand, type AttributeValue, type ConsumedCapacity, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { tableDefinition } from './store/table.ts';

/**
 * The cost accounting of `npm run bench` (docs/deploy.md#cost). When COST_ACCOUNTING_FILE names a file, every request
 * this process (and its worker threads) makes to DynamoDB, SQS and EventBridge, and every function invocation the
 * local runtime runs, is appended to it as one JSON line holding what AWS bills it by: the capacity DynamoDB
 * consumed (`ReturnConsumedCapacity`), the entries and payload sizes of SQS and EventBridge calls, an invocation's
 * duration. Unset, as on AWS and under `npm start`, requests are left as they are and nothing is written.
 */
export const costAccountingVariable = 'COST_ACCOUNTING_FILE';

/**
 * Who made an SQS request: a function, EventBridge delivering to a rule's target, EventBridge Scheduler delivering a
 * schedule, or Lambda's poller of a queue.
 */
export type SqsCaller = 'function' | 'event-rule' | 'scheduler' | 'event-source-mapping';

/** How a function was invoked, which says what stands in front of it (API Gateway's HTTP, REST or WebSocket API). */
export type InvocationTrigger = 'http-api' | 'rest-api' | 'websocket-api' | 'table-stream' | 'queue' | 'schedule';

export type CostRecord = (
  /** Read and write units as DynamoDB bills them (on-demand: request units). */
  | { kind: 'dynamodb'; operation: string; readUnits: number; writeUnits: number }
  /** One SQS request; `entryBytes` the size of each message sent or received. */
  | { kind: 'sqs'; operation: string; queue: string; caller: SqsCaller; entryBytes: number[] }
  /** Events put on the bus, by size. */
  | { kind: 'eventbridge'; entryBytes: number[] }
  | { kind: 'invocation'; function: string; trigger: InvocationTrigger; durationMs: number }
  /** A WebSocket API message, to the function (`in`) or to the client (`out`). */
  | { kind: 'websocket-message'; direction: 'in' | 'out'; bytes: number }
  | { kind: 'websocket-connection'; durationMs: number }
) & {
  /** The function whose invocation made the request; none for the local runtime's own machinery and the bench's set-up. */
  function?: string;
  /** When the request was sent (epoch ms; when it was written down, unless given): tells a turn's own requests from what follows it. */
  at?: number;
};

/** The function being invoked, for the requests its invocation makes. */
const invocationScope = new AsyncLocalStorage<string>();

/** Appends the record when accounting is on; the file is read once the measured work has settled. */
export function recordCost(record: CostRecord): void {
  const file = process.env[costAccountingVariable];
  if (!file) return;
  const functionName = record.function ?? invocationScope.getStore();
  appendFileSync(file, `${JSON.stringify({ ...record, ...(functionName ? { function: functionName } : {}), at: record.at ?? Date.now() })}\n`);
}

export function costAccountingOn(): boolean {
  return Boolean(process.env[costAccountingVariable]);
}

/** Runs `invocation` and records its duration, as Lambda bills it, under the function's name. */
export async function accountInvocation<T>(functionName: string, trigger: InvocationTrigger, invocation: () => Promise<T>): Promise<T> {
  if (!costAccountingOn()) return invocation();
  const started = performance.now();
  try {
    return await invocationScope.run(functionName, invocation);
  } finally {
    recordCost({ kind: 'invocation', function: functionName, trigger, durationMs: performance.now() - started });
  }
}

/** Transactions of this process still being sized: their records are written once these settle. */
const sizing = new Set<Promise<void>>();

/** Settles once every transaction this process has made so far is written down. */
export async function transactionsAccounted(): Promise<void> {
  await Promise.all(sizing);
}

function sizeTransaction(client: DynamoDBClient, items: TransactItem[], at: number): void {
  const recorded = recordTransaction(client, items, at).finally(() => sizing.delete(recorded));
  sizing.add(recorded);
}

const readOperations = new Set(['GetItem', 'BatchGetItem', 'Query', 'Scan', 'TransactGetItems']);
const writeOperations = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem', 'TransactWriteItems']);

/** Inputs this module sends itself (a transaction's items, read back to size them): never accounted. */
const ownRequests = new WeakSet<object>();

/**
 * Records the capacity each request consumes (the client asks for it on every request: `askConsumedCapacity` in
 * store/dynamo.ts). For TransactWriteItems, DynamoDB Local's
 * figure cannot be used (4 units per KB of the largest item, whatever the item count: 4 for one small item as for
 * five), so the units are computed as AWS documents them, 2 per KB of each item and of each index entry it writes,
 * from the items written: a Put's item from the request, the others read back afterwards, outside the caller's
 * time. A write refused by its condition is billed by AWS yet reports nothing: it counts one unit. A Query or Scan
 * that finds nothing is billed the least read (half a unit, one when strongly consistent); DynamoDB Local reports 0.
 */
export function accountDynamoDbRequests(client: DynamoDBClient): void {
  if (!costAccountingOn()) return;
  const operationOf = (commandName: string | undefined) => (commandName ?? '').replace(/Command$/, '');
  const accounted = (input: object, operation: string) => !ownRequests.has(input) && (readOperations.has(operation) || writeOperations.has(operation));
  // After serialization, where the items are in DynamoDB's own form whichever client (document or not) sent them.
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const operation = operationOf(context.commandName);
      if (!accounted(args.input as object, operation)) return next(args);
      const body = () => JSON.parse(bodyText((args.request as { body?: unknown }).body)) as { TransactItems?: TransactItem[]; ConsistentRead?: boolean };
      const at = Date.now();
      try {
        const result = await next(args);
        const reported = reportedUnits((result.output as { ConsumedCapacity?: ConsumedCapacity | ConsumedCapacity[] }).ConsumedCapacity);
        const leastRead = operation === 'Query' || operation === 'Scan' ? (body().ConsistentRead ? 1 : 0.5) : 0;
        if (operation === 'TransactWriteItems') sizeTransaction(client, body().TransactItems ?? [], at);
        else if (readOperations.has(operation)) recordCost({ kind: 'dynamodb', operation, readUnits: Math.max(reported, leastRead), writeUnits: 0, at });
        else recordCost({ kind: 'dynamodb', operation, readUnits: 0, writeUnits: reported, at });
        return result;
      } catch (error) {
        const name = (error as Error).name;
        if (name === 'ConditionalCheckFailedException') recordCost({ kind: 'dynamodb', operation, readUnits: 0, writeUnits: 1, at });
        // A canceled transaction went through its prepare phase on every item: billed as if written.
        else if (name === 'TransactionCanceledException') sizeTransaction(client, body().TransactItems ?? [], at);
        throw error;
      }
    },
    { step: 'build', name: 'costAccounting' },
  );
}

function bodyText(body: unknown): string {
  if (typeof body === 'string') return body;
  return body instanceof Uint8Array ? new TextDecoder().decode(body) : '{}';
}

function reportedUnits(consumed: ConsumedCapacity | ConsumedCapacity[] | undefined): number {
  return [consumed ?? []].flat().reduce((total, entry) => total + (entry.CapacityUnits ?? 0), 0);
}

type TransactItem = {
  Put?: { TableName?: string; Item?: Record<string, AttributeValue> };
  Update?: { TableName?: string; Key?: Record<string, AttributeValue>; UpdateExpression?: string; ExpressionAttributeNames?: Record<string, string> };
  Delete?: { TableName?: string; Key?: Record<string, AttributeValue> };
  ConditionCheck?: { TableName?: string; Key?: Record<string, AttributeValue> };
};

async function recordTransaction(client: DynamoDBClient, items: TransactItem[], at: number): Promise<void> {
  const readBack = items.flatMap((item) => {
    const target = item.Update ?? item.Delete ?? item.ConditionCheck;
    return target?.TableName && target.Key ? [{ TableName: target.TableName, Key: target.Key }] : [];
  });
  const stored = new Map<string, Record<string, AttributeValue>>();
  for (let start = 0; start < readBack.length; start += 100) {
    const RequestItems: Record<string, { Keys: Record<string, AttributeValue>[]; ConsistentRead: true }> = {};
    for (const { TableName, Key } of readBack.slice(start, start + 100)) (RequestItems[TableName] ??= { Keys: [], ConsistentRead: true }).Keys.push(Key);
    const request = { RequestItems };
    ownRequests.add(request);
    const response = await client.send(new BatchGetItemCommand(request)).catch(() => undefined);
    for (const found of Object.values(response?.Responses ?? {}).flat()) stored.set(keyOf(found), found);
  }
  const writeUnits = items.reduce((total, item) => {
    const target = item.Update ?? item.Delete ?? item.ConditionCheck;
    const written = item.Put?.Item ?? (target?.Key ? stored.get(keyOf(target.Key)) : undefined);
    // A deleted item is gone when read back: the least AWS bills, one KB.
    if (!written) return total + 2;
    return total + 2 * kilobytes(itemBytes(written)) * (1 + indexWrites(written, item.Update));
  }, 0);
  recordCost({ kind: 'dynamodb', operation: 'TransactWriteItems', readUnits: 0, writeUnits, at });
}

function keyOf(item: Record<string, AttributeValue>): string {
  return JSON.stringify([item[tableDefinition.partitionKey], item[tableDefinition.sortKey]]);
}

/**
 * The index entries a write of the item makes (every index projects all attributes): one for each index holding the
 * item, and where an update names an index key, the old entry's removal besides (counted whenever it is named,
 * as the key it had before is not known).
 */
function indexWrites(item: Record<string, AttributeValue>, update?: TransactItem['Update']): number {
  const expression = update?.UpdateExpression ?? '';
  const named = new Set(expression.match(/(?<![:\w#])#?[A-Za-z_]\w*/g)?.map((name) => update?.ExpressionAttributeNames?.[name] ?? name));
  return tableDefinition.globalSecondaryIndexes.reduce((total, index) => {
    const holds = Boolean(item[index.partitionKey] && item[index.sortKey]);
    const keyNamed = named.has(index.partitionKey) || named.has(index.sortKey);
    return total + (holds ? 1 : 0) + (keyNamed ? 1 : 0);
  }, 0);
}

const kilobytes = (bytes: number) => Math.max(1, Math.ceil(bytes / 1024));

/** An item's size as DynamoDB counts it: attribute names and values (docs: "Item sizes and formats"). */
export function itemBytes(item: Record<string, AttributeValue>): number {
  return Object.entries(item).reduce((total, [name, value]) => total + utf8(name) + valueBytes(value), 0);
}

function valueBytes(value: AttributeValue): number {
  if (value.S !== undefined) return utf8(value.S);
  if (value.N !== undefined) return numberBytes(value.N);
  if (value.B !== undefined) return value.B.length;
  if (value.BOOL !== undefined || value.NULL !== undefined) return 1;
  if (value.SS) return value.SS.reduce((total, entry) => total + utf8(entry), 0);
  if (value.NS) return value.NS.reduce((total, entry) => total + numberBytes(entry), 0);
  if (value.BS) return value.BS.reduce((total, entry) => total + entry.length, 0);
  // A list or map: 3 bytes, and 1 byte per element besides the element itself.
  if (value.L) return 3 + value.L.reduce((total, entry) => total + 1 + valueBytes(entry), 0);
  if (value.M) return 3 + Object.entries(value.M).reduce((total, [name, entry]) => total + 1 + utf8(name) + valueBytes(entry), 0);
  return 0;
}

/** One byte per two significant digits, plus one. */
function numberBytes(text: string): number {
  const digits = text.replace(/^-/, '').replace(/[eE].*$/, '').replace('.', '').replace(/^0+/, '').replace(/0+$/, '');
  return Math.ceil(Math.max(1, digits.length) / 2) + 1;
}

const utf8 = (text: string) => Buffer.byteLength(text, 'utf8');

/**
 * Records each SQS request with the size of each message it sends or receives (SQS bills a request per 64 KB of
 * payload). `caller` tells the local stand-ins for EventBridge and Lambda's pollers from the functions' own sends.
 */
export function accountSqsRequests(client: SQSClient, caller: SqsCaller = 'function'): void {
  if (!costAccountingOn()) return;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const at = Date.now();
      const result = await next(args);
      const input = args.input as { QueueUrl?: string; MessageBody?: string; Entries?: { MessageBody?: string }[] };
      const output = result.output as { Messages?: { Body?: string }[] };
      // Lambda's pollers of an idle queue: a fixed cost per queue (docs/deploy.md#cost), not any work's.
      if (caller === 'event-source-mapping' && !output.Messages?.length) return result;
      const sent = input.MessageBody !== undefined ? [input.MessageBody] : (input.Entries ?? []).flatMap((entry) => (entry.MessageBody === undefined ? [] : [entry.MessageBody]));
      const bodies = [...sent, ...(output.Messages ?? []).map((message) => message.Body ?? '')];
      recordCost({
        kind: 'sqs',
        operation: (context.commandName ?? '').replace(/Command$/, ''),
        queue: (input.QueueUrl ?? '').split('/').pop() ?? '',
        caller,
        entryBytes: bodies.map(utf8),
        at,
      });
      return result;
    },
    { step: 'initialize', name: 'costAccounting' },
  );
}

/** Records events put on the bus, by entry size (EventBridge bills each 64 KB of an event as one event). */
export function recordPublishedEvents(entryBytes: readonly number[]): void {
  recordCost({ kind: 'eventbridge', entryBytes: [...entryBytes] });
}
