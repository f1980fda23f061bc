import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import type { SQSRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { deliveryIdFor, processDeliveryWork, type DeliveryDeps } from '../../shared/webhooks/webhook-delivery.ts';
import { generateSigningSecret, signatureHeaders } from '../../shared/platform/net/standard-webhooks.ts';
import type { AttemptRequest } from '../../shared/webhooks/ports.ts';
import { maxQueueDelaySeconds, queueDelaySeconds } from '../../shared/platform/queue/sqs-scheduled-queue.ts';
import { deliveryParams } from '../../shared/webhooks/webhook-schemas.ts';

const instant = fc.integer({ min: Date.parse('2020-01-01'), max: Date.parse('2100-01-01') });

describe('delivery ids', () => {
  it('are the same for the same event and endpoint, and differ between endpoints', () => {
    fc.assert(
      fc.property(fc.uuid(), fc.uuid(), fc.uuid(), instant, (eventId, endpointA, endpointB, at) => {
        const event = { eventId, createdAt: new Date(at).toISOString() };
        expect(deliveryIdFor(event, endpointA)).toBe(deliveryIdFor(event, endpointA));
        if (endpointA !== endpointB) expect(deliveryIdFor(event, endpointA)).not.toBe(deliveryIdFor(event, endpointB));
      }),
    );
  });

  it('are UUIDv7s the API accepts, ordered by the event time', () => {
    fc.assert(
      fc.property(fc.uuid(), fc.uuid(), instant, instant, (eventId, endpointId, earlier, later) => {
        fc.pre(earlier < later);
        const first = deliveryIdFor({ eventId, createdAt: new Date(earlier).toISOString() }, endpointId);
        const second = deliveryIdFor({ eventId, createdAt: new Date(later).toISOString() }, endpointId);
        expect(first).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
        expect(deliveryParams.safeParse({ id: endpointId, deliveryId: first }).success).toBe(true);
        expect(first < second).toBe(true);
      }),
    );
  });
});

describe('queue delays', () => {
  it('cover the wait to the due time in whole seconds, capped at what SQS allows', () => {
    fc.assert(
      fc.property(instant, fc.integer({ min: -60_000, max: 48 * 3600_000 }), (now, wait) => {
        const delay = queueDelaySeconds(now + wait, now);
        expect(delay).toBeGreaterThanOrEqual(0);
        expect(delay).toBeLessThanOrEqual(maxQueueDelaySeconds);
        if (wait > 0 && wait <= maxQueueDelaySeconds * 1000) expect(delay * 1000).toBeGreaterThanOrEqual(wait);
        if (wait <= 0) expect(delay).toBe(0);
      }),
    );
  });
});

describe('signatures', () => {
  it('carry one v1 signature per secret, each verified by the standardwebhooks package', () => {
    const [current, previous] = [generateSigningSecret(), generateSigningSecret()];
    const body = JSON.stringify({ id: 'session', eventType: 'session.created' });
    const headers = signatureHeaders([current, previous], 'event-1', body);
    expect(headers['webhook-signature']?.split(' ')).toHaveLength(2);
    for (const secret of [current, previous]) expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(generateSigningSecret()).verify(body, headers)).toThrow();
  });
});

describe('attempts due later than SQS can delay', () => {
  it('go back on the queue, unchanged, until they are due; nothing is read or sent meanwhile', async () => {
    const now = Date.parse('2026-11-21T12:00:00Z');
    const scheduled: AttemptRequest[] = [];
    const counted: string[] = [];
    const untouched = new Proxy({}, { get: (_, name) => () => Promise.reject(new Error(`${String(name)} was called`)) });
    const deps = {
      webhooks: untouched as DeliveryDeps['webhooks'],
      deliveries: untouched as DeliveryDeps['deliveries'],
      queue: { schedule: async (requests: readonly AttemptRequest[]) => void scheduled.push(...requests) },
      clock: { now: () => new Date(now) },
      metrics: { add: (metric: { name: string }) => void counted.push(metric.name) },
      config: { WEBHOOK_RETRY_SCHEDULE_SECONDS: [28_800], WEBHOOK_TIMEOUT_MS: 15_000, WEBHOOK_DELIVERY_RETENTION_DAYS: 30, LOOPBACK_EGRESS_PORTS: [], EGRESS_DENIED_PORTS: [] },
    };
    const request: AttemptRequest = {
      kind: 'webhook.attempt',
      orgId: 'acme',
      endpointId: crypto.randomUUID(),
      deliveryId: crypto.randomUUID(),
      attempt: 9,
      step: 8,
      notBefore: now + 8 * 3600_000,
    };
    expect(await processDeliveryWork(deps, [{ kind: 'attempt', request }])).toEqual([undefined]);
    expect(scheduled).toEqual([request]);
    expect(counted).toEqual([]);
    expect(queueDelaySeconds(request.notBefore, now)).toBe(maxQueueDelaySeconds);
  });
});

describe('the delivery function', () => {
  it('hands back a message that is neither a published event nor a scheduled attempt, for the dead-letter queue', async () => {
    const { handler } = await import('../../functions/webhook-delivery/handler.ts');
    const record = (messageId: string, body: string) => ({ messageId, body, attributes: { ApproximateReceiveCount: '1' } }) as unknown as SQSRecord;
    const response = await handler({
      Records: [record('not-json', '{oops'), record('foreign', JSON.stringify({ source: 'elsewhere', 'detail-type': 'x', detail: {} }))],
    });
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'not-json' }, { itemIdentifier: 'foreign' }]);
  });
});
