import { randomUUID } from 'node:crypto';
import type { EventEmitter } from 'node:events';
import { SendMessageBatchCommand, SQSClient, type SendMessageBatchRequestEntry } from '@aws-sdk/client-sqs';
import type { EventRule } from '../../functions/consumers.ts';
import type { DomainEvent } from '../../shared/events/events.ts';
import { eventSource, localEventBus } from '../../shared/events/bus.ts';
import { accountSqsRequests } from '../../shared/platform/cost-accounting.ts';
import { logger } from '../../shared/platform/logger.ts';
import { emfMetrics, flushMetrics, queueRefusalsMetric } from '../../shared/platform/metrics.ts';
import { queueMessageBody } from '../../shared/platform/queue/queue-message.ts';
import { localAccountId, type LocalQueues } from './queues.ts';

/** The event as EventBridge hands it to a rule's target: for an SQS target, the message body. */
export interface EventBridgeEnvelope {
  version: '0';
  id: string;
  'detail-type': string;
  source: string;
  account: string;
  time: string;
  region: string;
  resources: string[];
  detail: { orgId: string; occurredAt: string; event: Record<string, unknown> };
}

/**
 * What EventBridge makes of an event `EventBridgeBus.publish` puts: a fresh id, and `time` to the second (EventBridge
 * drops the milliseconds of the entry's Time).
 */
export function eventBridgeEnvelope(event: DomainEvent, where: { account: string; region: string }): EventBridgeEnvelope {
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': event.type,
    source: eventSource,
    account: where.account,
    time: new Date(event.createdAt).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    region: where.region,
    resources: [],
    detail: { orgId: event.orgId, occurredAt: event.createdAt, event: event.payload },
  };
}

/** EventBridge pattern matching for the patterns rules use: each field named must equal one of its listed values. */
function matchesPattern(pattern: EventRule['pattern'], envelope: EventBridgeEnvelope): boolean {
  return Object.entries(pattern).every(([field, allowed]) => !allowed || allowed.includes(envelope[field as keyof EventBridgeEnvelope] as string));
}

const maxEntriesPerBatch = 10;
/** SendMessageBatch's classic limit on the sum of the bodies; EventBridge events are at most 256 KB each. */
const maxBatchBytes = 256 * 1024;
const maxRetryDelayMs = 2_000;
/** A refusal (a message too large…) does not pass by itself: retried less often, and logged each time. */
const maxRefusedRetryDelayMs = 30_000;
/** How long stop() keeps retrying sends that fail, before it gives them up. */
const stopGraceMs = 5_000;

interface Delivery {
  body: string;
  eventId: string;
  /** Settles once the queue holds the event, or the router stopped without sending it. */
  sent: Settlement;
}

interface Settlement {
  promise: Promise<void>;
  resolve(): void;
  reject(error: Error): void;
}

function settlement(): Settlement {
  let resolve = () => {};
  let reject: (error: Error) => void = () => {};
  const promise = new Promise<void>((resolvePromise, rejectPromise) => {
    resolve = resolvePromise;
    reject = rejectPromise;
  });
  // Emitted without a list (a test), nobody waits: a rejection must not go unhandled.
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

/**
 * The local stand-in for EventBridge rules with SQS targets: every event on the local bus that a rule's pattern
 * matches is sent to the rule's queue as EventBridge would deliver it, its body written by `queueMessageBody` so
 * that no character makes the queue refuse it. Events published together go in batches; a send that fails, even
 * one the queue refuses, is retried with backoff for as long as the process lives (EventBridge retries for 24 h,
 * then moves the event to the rule's dead-letter queue): a refusal is an error log naming the events and a
 * `QueueMessagesRefused` metric each time, never a quiet drop.
 */
export function startEventRouter(options: {
  queues: Pick<LocalQueues, 'clientConfig' | 'urlOf' | 'region'>;
  rules: readonly EventRule[];
  bus?: EventEmitter;
}): { stop(): Promise<void> } {
  const bus = options.bus ?? localEventBus;
  const client = new SQSClient(options.queues.clientConfig);
  accountSqsRequests(client, 'event-rule');
  const targets = options.rules.map((rule) => ({ pattern: rule.pattern, queueUrl: options.queues.urlOf(rule.target.name) }));
  const waiting = new Map<string, Delivery[]>();
  const inFlight = new Set<Promise<void>>();
  let giveUpAt: number | undefined;
  /** Retries waiting for their next attempt: stop() wakes them, so that they try once more before its deadline. */
  const waking = new Set<() => void>();

  function pause(ms: number): Promise<void> {
    const wait = giveUpAt === undefined ? ms : Math.min(ms, Math.max(0, giveUpAt - Date.now()));
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        waking.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, wait);
      waking.add(wake);
    });
  }

  /** `taken`, from `LocalEventBus.publish`: where to say when the event is in every queue its rules name. */
  function route(event: DomainEvent, taken?: Promise<void>[]): void {
    const envelope = eventBridgeEnvelope(event, { account: localAccountId, region: options.queues.region });
    const body = queueMessageBody(envelope);
    for (const target of targets) {
      if (!matchesPattern(target.pattern, envelope)) continue;
      const sent = settlement();
      taken?.push(sent.promise);
      enqueue(target.queueUrl, { body, eventId: event.eventId, sent });
    }
  }

  /** The bus emits the events of one publish in one synchronous loop: sending after it batches them together. */
  function enqueue(queueUrl: string, delivery: Delivery): void {
    const batch = waiting.get(queueUrl);
    if (batch) {
      batch.push(delivery);
      return;
    }
    waiting.set(queueUrl, [delivery]);
    track(
      new Promise<void>((resolve) => setImmediate(resolve)).then(async () => {
        const deliveries = waiting.get(queueUrl) ?? [];
        waiting.delete(queueUrl);
        await Promise.all(batches(deliveries).map((batch) => send(queueUrl, batch)));
      }),
    );
  }

  function track(work: Promise<void>): void {
    inFlight.add(work);
    void work.finally(() => inFlight.delete(work));
  }

  async function send(queueUrl: string, deliveries: Delivery[]): Promise<void> {
    let entries: (SendMessageBatchRequestEntry & { eventId: string; sent: Delivery['sent'] })[] = deliveries.map((delivery, index) => ({
      Id: String(index),
      MessageBody: delivery.body,
      eventId: delivery.eventId,
      sent: delivery.sent,
    }));
    let refusedBefore = false;
    for (let attempt = 0; ; attempt += 1) {
      let problem: string | undefined;
      try {
        const result = await client.send(
          new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries.map(({ Id, MessageBody }) => ({ Id, MessageBody })) }),
        );
        const failed = result.Failed ?? [];
        const refused = failed.filter((failure) => failure.SenderFault);
        if (refused.length > 0) {
          refusedBefore = true;
          const refusedIds = new Set(refused.map((failure) => failure.Id));
          logger.error('Event router: the queue refused events; retrying them', {
            queueUrl,
            eventIds: entries.filter((entry) => refusedIds.has(entry.Id)).map((entry) => entry.eventId),
            reasons: refused.map((failure) => `${failure.Code}: ${failure.Message}`),
          });
          emfMetrics.add(queueRefusalsMetric, refused.length);
          flushMetrics();
        }
        const failedIds = new Set(failed.map((failure) => failure.Id));
        for (const entry of entries) if (!failedIds.has(entry.Id)) entry.sent.resolve();
        entries = entries.filter((entry) => failedIds.has(entry.Id));
        problem = failed[0]?.Message;
      } catch (error) {
        problem = String(error);
      }
      if (entries.length === 0) return;
      if (giveUpAt !== undefined && Date.now() >= giveUpAt) {
        logger.error('Event router stopped before it could send events, they are lost', {
          queueUrl,
          eventIds: entries.map((entry) => entry.eventId),
          error: problem,
        });
        for (const entry of entries) entry.sent.reject(new Error(`The event router stopped before sending event ${entry.eventId}`));
        return;
      }
      if (attempt === 0) logger.warn('Event router: send failed, retrying', { queueUrl, error: problem });
      await pause(Math.min(refusedBefore ? maxRefusedRetryDelayMs : maxRetryDelayMs, 50 * 2 ** attempt));
    }
  }

  bus.on('event', route);
  return {
    stop: async () => {
      bus.off('event', route);
      giveUpAt = Date.now() + stopGraceMs;
      for (const wake of waking) wake();
      while (inFlight.size > 0) await Promise.all(inFlight);
      client.destroy();
    },
  };
}

/** At most ten entries and `maxBatchBytes` per call (one larger event goes alone). */
function batches(deliveries: Delivery[]): Delivery[][] {
  const result: Delivery[][] = [];
  let current: Delivery[] = [];
  let bytes = 0;
  for (const delivery of deliveries) {
    const size = Buffer.byteLength(delivery.body);
    if (current.length === maxEntriesPerBatch || (current.length > 0 && bytes + size > maxBatchBytes)) {
      result.push(current);
      current = [];
      bytes = 0;
    }
    current.push(delivery);
    bytes += size;
  }
  if (current.length > 0) result.push(current);
  return result;
}
