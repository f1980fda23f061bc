import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSigningSecret } from '../../shared/platform/net/standard-webhooks.ts';
import type { DomainEvent } from '../../shared/events/events.ts';
import { processDeliveryWork, type DeliveryDeps } from '../../shared/webhooks/webhook-delivery.ts';
import type { AttemptRequest, DeliverableEndpoint, StoredDelivery } from '../../shared/webhooks/ports.ts';
import { closeServer, listenOnLoopback } from '../support/loopback-server.ts';

/** A receiver on loopback that answers each path's status. */
let receiver: Server;
let base: string;
beforeAll(async () => {
  receiver = createServer((request, response) => {
    request.resume();
    response.statusCode = Number(request.url?.slice(1)) || 500;
    response.end();
  });
  base = `http://127.0.0.1:${await listenOnLoopback(receiver)}`;
});
afterAll(() => closeServer(receiver));

const now = new Date('2026-11-21T12:00:00Z');
const endpointAnswering = (status: number, enabled = true): DeliverableEndpoint =>
  ({ id: crypto.randomUUID(), orgId: 'acme', url: `${base}/${status}`, events: ['session.created'], enabled, secrets: [generateSigningSecret()] }) as unknown as DeliverableEndpoint;
const event: DomainEvent = { eventId: 'evt-1', type: 'session.created', orgId: 'acme', createdAt: now.toISOString(), payload: { eventId: 'evt-1' } } as DomainEvent;

/** Delivery deps whose stores hold `endpoint` and `pending`, counting what the metrics recorder is told. */
function depsWith(endpoint: DeliverableEndpoint, pending?: StoredDelivery) {
  const counted: Record<string, number> = {};
  const deps: DeliveryDeps = {
    webhooks: {
      deliverableFor: async () => [endpoint],
      deliverable: async () => endpoint,
      disable: async () => true,
    } as unknown as DeliveryDeps['webhooks'],
    deliveries: {
      create: async () => true,
      recordDelivered: async () => undefined,
      get: async () => pending,
      recordAttempt: async () => true,
    } as unknown as DeliveryDeps['deliveries'],
    queue: { schedule: async () => undefined },
    clock: { now: () => now },
    metrics: { add: (metric, value) => void (counted[metric.name] = (counted[metric.name] ?? 0) + value) },
    config: { WEBHOOK_RETRY_SCHEDULE_SECONDS: [5, 60], WEBHOOK_TIMEOUT_MS: 5_000, WEBHOOK_DELIVERY_RETENTION_DAYS: 30, LOOPBACK_EGRESS_PORTS: [[1024, 65_535]], EGRESS_DENIED_PORTS: [] },
  };
  return { deps, counted };
}

const pendingDelivery = (endpoint: DeliverableEndpoint, attempts: number): StoredDelivery =>
  ({ orgId: 'acme', body: '{}', delivery: { id: 'dlv-1', endpointId: endpoint.id, eventId: 'evt-1', eventType: 'session.created', state: 'PENDING', attempts } }) as unknown as StoredDelivery;
const attempt = (endpoint: DeliverableEndpoint, number: number, step: number): AttemptRequest => ({
  kind: 'webhook.attempt', orgId: 'acme', endpointId: endpoint.id, deliveryId: 'dlv-1', attempt: number, step, notBefore: now.getTime(),
});

describe('the metrics of webhook deliveries', () => {
  it('count a delivery the receiver accepted', async () => {
    const { deps, counted } = depsWith(endpointAnswering(204));
    expect(await processDeliveryWork(deps, [{ kind: 'event', event, redelivered: false }])).toEqual([undefined]);
    expect(counted).toEqual({ WebhookDeliveries: 1 });
  });

  it('count a failed attempt that will be retried, and nothing dead-lettered', async () => {
    const { deps, counted } = depsWith(endpointAnswering(500));
    await processDeliveryWork(deps, [{ kind: 'event', event, redelivered: false }]);
    expect(counted).toEqual({ WebhookAttemptsFailed: 1 });
  });

  it('count a delivery given up when the schedule is spent, or the receiver answers 410', async () => {
    const failing = endpointAnswering(503);
    const spent = depsWith(failing, pendingDelivery(failing, 2));
    await processDeliveryWork(spent.deps, [{ kind: 'attempt', request: attempt(failing, 3, 2) }]);
    expect(spent.counted).toEqual({ WebhookAttemptsFailed: 1, WebhookDeliveriesDeadLettered: 1 });
    const gone = depsWith(endpointAnswering(410));
    await processDeliveryWork(gone.deps, [{ kind: 'event', event, redelivered: false }]);
    expect(gone.counted).toEqual({ WebhookAttemptsFailed: 1, WebhookDeliveriesDeadLettered: 1 });
  });

  it('count a pending delivery of a disabled endpoint as given up, without an attempt', async () => {
    const disabled = endpointAnswering(204, false);
    const { deps, counted } = depsWith(disabled, pendingDelivery(disabled, 1));
    await processDeliveryWork(deps, [{ kind: 'attempt', request: attempt(disabled, 2, 1) }]);
    expect(counted).toEqual({ WebhookDeliveriesDeadLettered: 1 });
  });
});
