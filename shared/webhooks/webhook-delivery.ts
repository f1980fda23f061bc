import { createHash } from 'node:crypto';
import type { Config } from '../platform/config.ts';
import { DeliveryPendingError, NotFoundError, WebhookDisabledError } from '../platform/errors.ts';
import { EgressBlockedError, egressPolicyFromConfig, guardedRequest, OutboundTimeoutError, type GuardedResponse } from '../platform/net/egress-guard.ts';
import { signatureHeaders } from '../platform/net/standard-webhooks.ts';
import type { AttemptRequest, DeliverableEndpoint, DeliveryChanges, DeliveryQueue, StoredDelivery, WebhookDeliveryStore, WebhookStore } from './ports.ts';
import type { DeliveryPage, ListDeliveriesQuery, WebhookDelivery } from './webhook-schemas.ts';
import { nextCursorAfter, readPageCursor } from '../platform/page-cursor.ts';
import type { Clock } from '../platform/clock.ts';
import type { MetricsRecorder } from '../platform/ports.ts';
import type { DomainEvent } from '../events/events.ts';
import { getWebhook } from './webhooks.ts';
import { webhookMetrics } from './webhook-metrics.ts';

export interface DeliveryDeps {
  webhooks: WebhookStore;
  deliveries: WebhookDeliveryStore;
  queue: DeliveryQueue;
  clock: Clock;
  metrics: MetricsRecorder;
  config: Pick<
    Config,
    'WEBHOOK_RETRY_SCHEDULE_SECONDS' | 'WEBHOOK_TIMEOUT_MS' | 'WEBHOOK_DELIVERY_RETENTION_DAYS' | 'LOOPBACK_EGRESS_PORTS' | 'EGRESS_DENIED_PORTS'
  >;
  /** Source of the retry jitter; `Math.random` unless a test pins it. */
  random?: () => number;
}

/** What the delivery function is handed: a published event to fan out, or a scheduled attempt that is due. */
export type DeliveryWork = { kind: 'event'; event: DomainEvent; redelivered: boolean } | { kind: 'attempt'; request: AttemptRequest };

export const webhookUserAgent = 'agent-platform-webhooks/1';
/** Each retry waits its scheduled delay less up to this fraction, so retries spread out and the window never grows. */
const jitterFraction = 0.2;
/** A `Retry-After` may ask for more than the schedule, up to the longest delay SQS can hold a message invisible. */
const maxRetryAfterMs = 12 * 60 * 60 * 1000;
/** An attempt that arrives this early (SQS rounds delays to seconds and caps them at 15 minutes) waits again. */
const earlyArrivalToleranceMs = 1_000;
const errorBodyBytes = 200;

/**
 * The delivery id of an event for an endpoint: a UUIDv7 whose time is the event's and whose other bits hash the
 * event and endpoint ids. Deterministic, so a redelivered event finds the delivery it already made; time-ordered,
 * so the endpoint's deliveries list in event order straight from the table.
 */
export function deliveryIdFor(event: Pick<DomainEvent, 'eventId' | 'createdAt'>, endpointId: string): string {
  const bytes = Buffer.alloc(16);
  bytes.writeUIntBE(Math.max(0, Date.parse(event.createdAt) || 0), 0, 6);
  const hash = createHash('sha256').update(`${event.eventId}/${endpointId}`).digest();
  hash.copy(bytes, 6, 0, 10);
  bytes[6] = 0x70 | (bytes[6]! & 0x0f);
  bytes[8] = 0x80 | (bytes[8]! & 0x3f);
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

interface AttemptOutcome {
  delivered: boolean;
  statusCode?: number;
  error?: string;
  /** The receiver's `Retry-After`, in ms. */
  retryAfterMs?: number;
  /** 410 Gone: the receiver asks for no more deliveries (Standard Webhooks). */
  gone: boolean;
}

/**
 * Handles one batch from the delivery queue: for each item, undefined when done with it (delivered, scheduled for
 * a retry, or nothing left to do), or the error for which it must go back to the queue. The organization's
 * endpoints are read once per event type in the batch, and the first attempts that succeeded are recorded in one
 * write at the end (before the queue forgets their messages).
 */
export async function processDeliveryWork(deps: DeliveryDeps, work: readonly DeliveryWork[]): Promise<unknown[]> {
  const endpoints = new Map<string, Promise<DeliverableEndpoint[]>>();
  const endpointsFor = (event: DomainEvent): Promise<DeliverableEndpoint[]> => {
    const key = `${event.orgId}\u0000${event.type}`;
    let found = endpoints.get(key);
    if (!found) {
      found = deps.webhooks.deliverableFor(event.orgId, event.type, deps.clock.now().getTime());
      endpoints.set(key, found);
    }
    return found;
  };
  const delivered: { index: number; stored: StoredDelivery }[] = [];
  const results = await Promise.allSettled(
    work.map(async (item, index) => {
      if (item.kind === 'attempt') return attemptDelivery(deps, item.request);
      const subscribed = await endpointsFor(item.event);
      await Promise.all(
        subscribed.map(async (endpoint) => {
          const stored = await deliverEvent(deps, item.event, endpoint, item.redelivered);
          if (stored) delivered.push({ index, stored });
        }),
      );
    }),
  );
  const errors = results.map((result) => (result.status === 'rejected' ? (result.reason ?? new Error('failed')) : undefined));
  try {
    // Also those of an event that failed at another endpoint: when it comes back, these endpoints are skipped.
    await deps.deliveries.recordDelivered(
      delivered.map(({ stored }) => stored),
      expiresAt(deps, deps.clock.now()),
    );
  } catch (error) {
    // Unrecorded, their events go back to the queue; they are sent again (receivers deduplicate on webhook-id).
    for (const { index } of delivered) errors[index] ??= error;
  }
  return errors;
}

const expiresAt = (deps: DeliveryDeps, now: Date): number =>
  Math.floor(now.getTime() / 1000) + deps.config.WEBHOOK_DELIVERY_RETENTION_DAYS * 86_400;

/**
 * The first attempt of an event at one endpoint, made before anything is written. A success is returned for the
 * batch to record; a failure is recorded here, after its retry is scheduled, so a crash anywhere before the record
 * means the queue hands the event over again and the attempt is repeated. A redelivered event skips endpoints that
 * already have it.
 */
async function deliverEvent(
  deps: DeliveryDeps,
  event: DomainEvent,
  endpoint: DeliverableEndpoint,
  redelivered: boolean,
): Promise<StoredDelivery | undefined> {
  const id = deliveryIdFor(event, endpoint.id);
  if (redelivered && (await deps.deliveries.get(event.orgId, endpoint.id, id))) return undefined;
  const body = JSON.stringify(event.payload);
  const outcome = await sendAttempt(deps, endpoint, event.eventId, body);
  const now = deps.clock.now();
  const { changes, next } = settle(deps, outcome, 1, 0, now);
  // Fields the outcome cleared (`undefined`) are not stored: the store drops undefined values.
  const delivery = {
    id,
    endpointId: endpoint.id,
    eventId: event.eventId,
    eventType: event.type,
    createdAt: event.createdAt,
    ...changes,
  } as WebhookDelivery;
  const stored = { orgId: event.orgId, delivery, body };
  if (outcome.delivered) return stored;
  if (next) await deps.queue.schedule([{ kind: 'webhook.attempt', orgId: event.orgId, endpointId: endpoint.id, deliveryId: id, ...next }]);
  await deps.deliveries.create(stored, expiresAt(deps, now));
  if (outcome.gone) await deps.webhooks.disable(event.orgId, endpoint.id, now.toISOString());
  return undefined;
}

/**
 * A scheduled attempt. It goes ahead only if the delivery is PENDING with exactly `attempt - 1` attempts made, so a
 * duplicate or stale message does nothing; its outcome is written on that same condition. The next attempt is
 * scheduled before the outcome is written, so a crash in between repeats this attempt rather than losing the next.
 */
async function attemptDelivery(deps: DeliveryDeps, request: AttemptRequest): Promise<void> {
  if (request.notBefore - deps.clock.now().getTime() > earlyArrivalToleranceMs) {
    await deps.queue.schedule([request]);
    return;
  }
  const stored = await deps.deliveries.get(request.orgId, request.endpointId, request.deliveryId);
  if (!stored || stored.delivery.state !== 'PENDING' || stored.delivery.attempts !== request.attempt - 1) return;
  const endpoint = await deps.webhooks.deliverable(request.orgId, request.endpointId, deps.clock.now().getTime());
  // A deleted endpoint takes its deliveries with it: they are no longer listed, and expire with the retention.
  if (!endpoint) return;
  const record = (changes: DeliveryChanges) =>
    deps.deliveries.recordAttempt(request.orgId, request.endpointId, request.deliveryId, request.attempt - 1, changes);
  if (!endpoint.enabled) {
    const at = deps.clock.now().toISOString();
    deps.metrics.add(webhookMetrics.deadLettered, 1);
    await record({ state: 'DEAD_LETTERED', deadLetteredAt: at, updatedAt: at, nextAttemptAt: undefined, lastError: 'The endpoint is disabled.' });
    return;
  }
  const outcome = await sendAttempt(deps, endpoint, stored.delivery.eventId, stored.body);
  const now = deps.clock.now();
  const { changes, next } = settle(deps, outcome, request.attempt, request.step, now);
  if (next) await deps.queue.schedule([{ ...request, ...next }]);
  await record(changes);
  if (outcome.gone) await deps.webhooks.disable(request.orgId, request.endpointId, now.toISOString());
}

/**
 * What an attempt's outcome makes of the delivery: DELIVERED; PENDING with the next attempt after the schedule's
 * delay at `step` (less jitter, or the receiver's `Retry-After` when longer); DEAD_LETTERED when the schedule is
 * spent or the receiver answered 410. Counted in the operational metrics as it is decided.
 */
function settle(
  deps: DeliveryDeps,
  outcome: AttemptOutcome,
  attempt: number,
  step: number,
  now: Date,
): { changes: DeliveryChanges; next?: Pick<AttemptRequest, 'attempt' | 'step' | 'notBefore'> } {
  const settled = settleAttempt(deps, outcome, attempt, step, now);
  if (settled.changes.state === 'DELIVERED') deps.metrics.add(webhookMetrics.delivered, 1);
  else deps.metrics.add(webhookMetrics.attemptsFailed, 1);
  if (settled.changes.state === 'DEAD_LETTERED') deps.metrics.add(webhookMetrics.deadLettered, 1);
  return settled;
}

function settleAttempt(
  deps: DeliveryDeps,
  outcome: AttemptOutcome,
  attempt: number,
  step: number,
  now: Date,
): { changes: DeliveryChanges; next?: Pick<AttemptRequest, 'attempt' | 'step' | 'notBefore'> } {
  const at = now.toISOString();
  const common: DeliveryChanges = { attempts: attempt, lastAttemptAt: at, updatedAt: at, lastStatusCode: outcome.statusCode };
  if (outcome.delivered) return { changes: { ...common, state: 'DELIVERED', deliveredAt: at, lastError: undefined, nextAttemptAt: undefined } };
  const schedule = deps.config.WEBHOOK_RETRY_SCHEDULE_SECONDS;
  const delaySeconds = schedule[step];
  if (outcome.gone || delaySeconds === undefined) {
    return { changes: { ...common, state: 'DEAD_LETTERED', deadLetteredAt: at, lastError: outcome.error, nextAttemptAt: undefined } };
  }
  const jittered = delaySeconds * 1000 * (1 - jitterFraction * (deps.random ?? Math.random)());
  const delayMs = Math.round(Math.max(jittered, Math.min(outcome.retryAfterMs ?? 0, maxRetryAfterMs)));
  const notBefore = now.getTime() + delayMs;
  return {
    changes: { ...common, state: 'PENDING', lastError: outcome.error, nextAttemptAt: new Date(notBefore).toISOString() },
    next: { attempt: attempt + 1, step: step + 1, notBefore },
  };
}

/** One signed POST of the event to the endpoint, under the egress guard; never throws. */
async function sendAttempt(deps: DeliveryDeps, endpoint: DeliverableEndpoint, eventId: string, body: string): Promise<AttemptOutcome> {
  const timeoutMs = deps.config.WEBHOOK_TIMEOUT_MS;
  let response: GuardedResponse;
  try {
    response = await guardedRequest(
      new URL(endpoint.url),
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
          'user-agent': webhookUserAgent,
          ...signatureHeaders(endpoint.secrets, eventId, body, deps.clock.now()),
        },
        body,
        timeoutMs,
        maxResponseBytes: errorBodyBytes,
      },
      egressPolicyFromConfig(deps.config),
    );
  } catch (error) {
    if (error instanceof OutboundTimeoutError) return { delivered: false, gone: false, error: `No answer within ${timeoutMs} ms.` };
    if (error instanceof EgressBlockedError) return { delivered: false, gone: false, error: 'The endpoint resolves to an address webhooks may not reach.' };
    return { delivered: false, gone: false, error: (error as Error).message };
  }
  const statusCode = response.status;
  if (statusCode >= 200 && statusCode < 300) return { delivered: true, gone: false, statusCode };
  const text = response.body.toString('utf8').replace(/\s+/g, ' ').trim();
  const retryAfterMs = retryAfter(response.headers['retry-after'], deps.clock.now());
  return {
    delivered: false,
    gone: statusCode === 410,
    statusCode,
    error: `HTTP ${statusCode}${text ? `: ${text}` : ''}`,
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
  };
}

/** `Retry-After` as seconds or an HTTP date, in ms from now; undefined when absent or unreadable. */
function retryAfter(header: string | undefined, now: Date): number | undefined {
  if (!header) return undefined;
  if (/^\d+$/.test(header.trim())) return Number(header.trim()) * 1000;
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now.getTime());
}

export async function listDeliveries(
  deps: Pick<DeliveryDeps, 'webhooks' | 'deliveries'>,
  orgId: string,
  endpointId: string,
  query: ListDeliveriesQuery,
): Promise<DeliveryPage> {
  await getWebhook(deps, orgId, endpointId);
  const listing = `${query.sort.direction}|${query.state ?? ''}`;
  const resumed = query.cursor === undefined ? undefined : readPageCursor(query.cursor, listing, 'sort and state');
  // A cursor continues after the last delivery it names; a page number alone reads the pages before it too.
  const page = resumed?.page ?? query.page;
  const skip = resumed ? 0 : (page - 1) * query.limit;
  const deliveries = await deps.deliveries.list(orgId, endpointId, {
    state: query.state,
    direction: query.sort.direction,
    limit: skip + query.limit + 1,
    after: resumed?.after,
  });
  const data = deliveries.slice(skip, skip + query.limit);
  const hasMore = deliveries.length > skip + query.limit;
  return {
    data,
    pagination: {
      page,
      limit: query.limit,
      hasMore,
      ...nextCursorAfter(hasMore ? data.at(-1)?.id : undefined, page, listing),
    },
  };
}

export async function getDelivery(
  deps: Pick<DeliveryDeps, 'webhooks' | 'deliveries'>,
  orgId: string,
  endpointId: string,
  deliveryId: string,
): Promise<WebhookDelivery> {
  await getWebhook(deps, orgId, endpointId);
  const stored = await deps.deliveries.get(orgId, endpointId, deliveryId);
  if (!stored) throw new NotFoundError(`Delivery ${deliveryId} not found.`);
  return stored.delivery;
}

/**
 * Sends a delivered or dead-lettered event again, once, now: the delivery goes back to PENDING and one attempt is
 * queued at the end of the schedule, so that if it fails the delivery is dead-lettered again rather than retried.
 */
export async function replayDelivery(
  deps: Pick<DeliveryDeps, 'webhooks' | 'deliveries' | 'queue' | 'clock' | 'config'>,
  orgId: string,
  endpointId: string,
  deliveryId: string,
): Promise<WebhookDelivery> {
  const endpoint = await getWebhook(deps, orgId, endpointId);
  if (!endpoint.enabled) throw new WebhookDisabledError(`Webhook endpoint ${endpointId} is disabled; enable it before replaying its deliveries.`);
  const now = deps.clock.now();
  const reopened = await deps.deliveries.reopen(orgId, endpointId, deliveryId, now.toISOString());
  if (reopened === 'missing') throw new NotFoundError(`Delivery ${deliveryId} not found.`);
  if (reopened === 'pending') throw new DeliveryPendingError(`Delivery ${deliveryId} is pending: it is attempted again at its nextAttemptAt.`);
  const attempt: AttemptRequest = {
    kind: 'webhook.attempt',
    orgId,
    endpointId,
    deliveryId,
    attempt: reopened.attempts + 1,
    step: deps.config.WEBHOOK_RETRY_SCHEDULE_SECONDS.length,
    notBefore: now.getTime(),
  };
  try {
    await deps.queue.schedule([attempt]);
  } catch (error) {
    // Not left PENDING with nothing queued: dead-lettered, it can be replayed again.
    const at = deps.clock.now().toISOString();
    const lastError = 'The replay could not be queued.';
    await deps.deliveries.recordAttempt(orgId, endpointId, deliveryId, reopened.attempts, { state: 'DEAD_LETTERED', deadLetteredAt: at, updatedAt: at, nextAttemptAt: undefined, lastError });
    throw error;
  }
  return reopened;
}
