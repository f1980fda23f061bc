import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { deliveryIdFor } from '../../shared/domain/webhook-delivery.ts';
import { generateSigningSecret, signatureHeaders } from '../../shared/net/standard-webhooks.ts';
import { maxQueueDelaySeconds, queueDelaySeconds } from '../../shared/queue/sqs-delivery-queue.ts';
import { deliveryParams } from '../../shared/schemas/webhook.ts';

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
