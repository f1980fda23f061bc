/**
 * What the requests recorded by the cost accounting (shared/platform/cost-accounting.ts) are billed as on AWS, and at
 * what list price: the units and counts of a piece of work (a chat turn, a call minute, a webhook delivery), divided
 * per unit of it, and their dollars. Pure functions of the records, so a later check can hold the counts to a
 * budget (docs/deploy.md#cost).
 */
import { readFileSync } from 'node:fs';
import type { CostRecord } from '../shared/platform/cost-accounting.ts';

/**
 * us-east-1 list prices, arm64 Lambda, without free tiers or volume tiers, as the AWS pricing pages show them
 * (read on `checked`; docs/deploy.md#cost names the pages).
 */
export const listPrices = {
  checked: '2026-11-26',
  region: 'us-east-1',
  /** DynamoDB on-demand, per write and read request unit. */
  dynamodbWriteUnit: 0.625 / 1e6,
  dynamodbReadUnit: 0.125 / 1e6,
  /** Lambda arm64: per GB-second of duration, and per request. */
  lambdaGbSecond: 0.0000133334,
  lambdaRequest: 0.2 / 1e6,
  /** SQS, per request (each 64 KB of payload is a request). */
  sqsStandardRequest: 0.4 / 1e6,
  sqsFifoRequest: 0.5 / 1e6,
  /** EventBridge custom events, per event (each 64 KB is an event); EventBridge Scheduler, per invocation. */
  eventBridgeEvent: 1 / 1e6,
  schedulerInvocation: 1 / 1e6,
  /** API Gateway: HTTP API and REST API requests; WebSocket API messages (per 32 KB) and connection minutes. */
  httpApiRequest: 1 / 1e6,
  restApiRequest: 3.5 / 1e6,
  websocketMessage: 1 / 1e6,
  websocketConnectionMinute: 0.25 / 1e6,
  /** CloudFront HTTPS requests (North America). */
  cloudFrontRequest: 0.01 / 1e4,
} as const;

export interface UsageCounts {
  dynamodb: { requests: number; readUnits: number; writeUnits: number; byOperation: Record<string, DynamoDbUnits>; byFunction: Record<string, DynamoDbUnits> };
  /** Events billed (64 KB chunks), and Scheduler's invocations (a call's backstop). */
  eventBridge: { events: number; schedulerInvocations: number };
  /** Requests billed (64 KB chunks), by queue kind. */
  sqs: { requests: number; fifoRequests: number; byQueue: Record<string, number> };
  lambda: { invocations: number; gbSeconds: number; byFunction: Record<string, { invocations: number; gbSeconds: number }> };
  apiGateway: { httpApiRequests: number; restApiRequests: number; websocketMessages: number; websocketConnectionMinutes: number };
  cloudFront: { requests: number };
}

export interface DynamoDbUnits {
  requests: number;
  readUnits: number;
  writeUnits: number;
}

export interface Dollars {
  dynamodb: number;
  eventBridge: number;
  sqs: number;
  lambda: number;
  apiGateway: number;
  cloudFront: number;
  total: number;
}

export interface CostFigure extends UsageCounts {
  dollars: Dollars;
}

const sqsChunk = 64 * 1024;
const eventChunk = 64 * 1024;
const websocketChunk = 32 * 1024;

/** Whether a record is part of the work measured, and not the local runtime's own machinery. */
export function isBilledWork(record: CostRecord): boolean {
  switch (record.kind) {
    case 'sqs':
      return record.caller !== 'function' || Boolean(record.function);
    // Requests made outside any invocation are the bench's set-up or the stand-ins' own reads (TTL sweeps…).
    case 'dynamodb':
    case 'eventbridge':
      return Boolean(record.function);
    default:
      return true;
  }
}

/** The units and counts of the records, as AWS bills them, with `memoryMbOf` each function's memory. */
export function usageOf(records: readonly CostRecord[], memoryMbOf: (functionName: string) => number): UsageCounts {
  const usage = emptyUsage();
  for (const record of records) {
    switch (record.kind) {
      case 'dynamodb': {
        const byOperation = (usage.dynamodb.byOperation[record.operation] ??= { requests: 0, readUnits: 0, writeUnits: 0 });
        const byFunction = (usage.dynamodb.byFunction[record.function ?? 'unknown'] ??= { requests: 0, readUnits: 0, writeUnits: 0 });
        for (const units of [usage.dynamodb, byOperation, byFunction]) {
          units.requests += 1;
          units.readUnits += record.readUnits;
          units.writeUnits += record.writeUnits;
        }
        break;
      }
      case 'sqs': {
        // EventBridge sends each event of a rule's SQS target as a message of its own.
        const billed =
          record.caller === 'event-rule'
            ? record.entryBytes.reduce((total, bytes) => total + chunks(bytes, sqsChunk), 0)
            : chunks(record.entryBytes.reduce((total, bytes) => total + bytes, 0), sqsChunk);
        if (record.caller === 'scheduler') usage.eventBridge.schedulerInvocations += record.entryBytes.length;
        if (record.queue.endsWith('.fifo')) usage.sqs.fifoRequests += billed;
        else usage.sqs.requests += billed;
        usage.sqs.byQueue[record.queue] = (usage.sqs.byQueue[record.queue] ?? 0) + billed;
        break;
      }
      case 'eventbridge':
        usage.eventBridge.events += record.entryBytes.reduce((total, bytes) => total + chunks(bytes, eventChunk), 0);
        break;
      case 'invocation': {
        // Lambda bills duration rounded up to the millisecond.
        const name = record.function ?? 'unknown';
        const gbSeconds = (Math.ceil(record.durationMs) / 1000) * (memoryMbOf(name) / 1024);
        const entry = (usage.lambda.byFunction[name] ??= { invocations: 0, gbSeconds: 0 });
        entry.invocations += 1;
        entry.gbSeconds += gbSeconds;
        usage.lambda.invocations += 1;
        usage.lambda.gbSeconds += gbSeconds;
        if (record.trigger === 'http-api') usage.apiGateway.httpApiRequests += 1;
        if (record.trigger === 'rest-api') usage.apiGateway.restApiRequests += 1;
        // Every HTTP request comes through CloudFront (the stack's ApiBaseUrl).
        if (record.trigger === 'http-api' || record.trigger === 'rest-api') usage.cloudFront.requests += 1;
        break;
      }
      case 'websocket-message':
        usage.apiGateway.websocketMessages += chunks(record.bytes, websocketChunk);
        break;
      case 'websocket-connection':
        usage.apiGateway.websocketConnectionMinutes += Math.max(1, Math.ceil(record.durationMs / 60_000));
        break;
    }
  }
  return usage;
}

/** At least one chunk: an empty request is billed as one. */
function chunks(bytes: number, size: number): number {
  return Math.max(1, Math.ceil(bytes / size));
}

export function dollarsOf(usage: UsageCounts, prices = listPrices): Dollars {
  const dollars = {
    dynamodb: usage.dynamodb.readUnits * prices.dynamodbReadUnit + usage.dynamodb.writeUnits * prices.dynamodbWriteUnit,
    eventBridge: usage.eventBridge.events * prices.eventBridgeEvent + usage.eventBridge.schedulerInvocations * prices.schedulerInvocation,
    sqs: usage.sqs.requests * prices.sqsStandardRequest + usage.sqs.fifoRequests * prices.sqsFifoRequest,
    lambda: usage.lambda.gbSeconds * prices.lambdaGbSecond + usage.lambda.invocations * prices.lambdaRequest,
    apiGateway:
      usage.apiGateway.httpApiRequests * prices.httpApiRequest +
      usage.apiGateway.restApiRequests * prices.restApiRequest +
      usage.apiGateway.websocketMessages * prices.websocketMessage +
      usage.apiGateway.websocketConnectionMinutes * prices.websocketConnectionMinute,
    cloudFront: usage.cloudFront.requests * prices.cloudFrontRequest,
  };
  return { ...dollars, total: Object.values(dollars).reduce((total, value) => total + value, 0) };
}

/** The records' usage per unit of work (`units` turns, call minutes, deliveries), with its dollars. */
export function costPer(records: readonly CostRecord[], units: number, memoryMbOf: (functionName: string) => number): CostFigure {
  const usage = scaleUsage(usageOf(records.filter(isBilledWork), memoryMbOf), 1 / units);
  return { ...usage, dollars: dollarsOf(usage) };
}

/** `a` less `b`: what a variant of the same work adds (a webhook endpoint subscribed, say). */
export function usageDifference(a: UsageCounts, b: UsageCounts): UsageCounts {
  return combine(a, b, (x, y) => x - y);
}

/**
 * Each figure at 0 or more: two runs of the same work can batch a request or two differently, and what a variant
 * adds is never a saving.
 */
export function atLeastZero(usage: UsageCounts): UsageCounts {
  return combine(usage, usage, (x) => Math.max(0, x));
}

export function scaleUsage(usage: UsageCounts, factor: number): UsageCounts {
  return combine(usage, usage, (x) => x * factor);
}

function combine(a: UsageCounts, b: UsageCounts, operate: (x: number, y: number) => number): UsageCounts {
  const merge = <T>(x: T, y: T): T => {
    if (typeof x === 'number') return operate(x, (y as number) ?? 0) as T;
    const keys = new Set([...Object.keys(x as object), ...Object.keys((y ?? {}) as object)]);
    return Object.fromEntries(
      [...keys].map((key) => {
        const left = (x as Record<string, unknown>)[key];
        const right = (y as Record<string, unknown> | undefined)?.[key];
        return [key, merge(left ?? zeroLike(right), right ?? zeroLike(left))];
      }),
    ) as T;
  };
  return merge(a, b);
}

/** A zero of the same shape: 0 for a number, an object of zeros for an object. */
function zeroLike(value: unknown): unknown {
  if (typeof value === 'number') return 0;
  return Object.fromEntries(Object.entries(value as object).map(([key, entry]) => [key, zeroLike(entry)]));
}

function emptyUsage(): UsageCounts {
  return {
    dynamodb: { requests: 0, readUnits: 0, writeUnits: 0, byOperation: {}, byFunction: {} },
    eventBridge: { events: 0, schedulerInvocations: 0 },
    sqs: { requests: 0, fifoRequests: 0, byQueue: {} },
    lambda: { invocations: 0, gbSeconds: 0, byFunction: {} },
    apiGateway: { httpApiRequests: 0, restApiRequests: 0, websocketMessages: 0, websocketConnectionMinutes: 0 },
    cloudFront: { requests: 0 },
  };
}

/** The records a COST_ACCOUNTING_FILE holds from `offset` (characters) on, and where they end. */
export function readCostRecords(file: string, offset = 0): { records: CostRecord[]; end: number } {
  const text = readFileSync(file, 'utf8');
  const records = text
    .slice(offset)
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as CostRecord);
  return { records, end: text.length };
}
