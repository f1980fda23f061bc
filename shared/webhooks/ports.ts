/** The ports of the webhooks context: the interfaces its use cases depend on, implemented by its adapters (issue 22 split shared/ports.ts by context). */
import type { IdempotencyCompletion, ScheduledQueue } from '../platform/ports.ts';
import type { DeliveryState, WebhookDelivery, WebhookEndpoint } from './webhook-schemas.ts';

export type { WebhookEndpoint } from './webhook-schemas.ts';

/** An endpoint as delivery uses it: with the secrets to sign with (the previous one while a rotation overlaps). */
export interface DeliverableEndpoint extends WebhookEndpoint {
  secrets: string[];
}

export interface WebhookStore {
  /** Stores the endpoint with its first signing secret. */
  create(endpoint: WebhookEndpoint, secret: string, completion?: IdempotencyCompletion): Promise<void>;
  get(orgId: string, endpointId: string): Promise<WebhookEndpoint | undefined>;
  list(orgId: string): Promise<WebhookEndpoint[]>;
  replace(previous: WebhookEndpoint, next: WebhookEndpoint): Promise<void>;
  delete(orgId: string, endpointId: string): Promise<boolean>;
  /** Makes `secret` the signing secret; the old one keeps signing too until `previousValidUntil` (epoch ms). */
  rotateSecret(orgId: string, endpointId: string, secret: string, previousValidUntil: number): Promise<boolean>;
  /** The organization's enabled endpoints subscribed to this event type, with their current secrets. */
  deliverableFor(orgId: string, eventType: string, nowMs: number): Promise<DeliverableEndpoint[]>;
  /** One endpoint with its current secrets, for a delivery attempt (undefined when deleted). */
  deliverable(orgId: string, endpointId: string, nowMs: number): Promise<DeliverableEndpoint | undefined>;
  /** Turns the endpoint off (its receiver answered 410 Gone); false when it no longer exists. */
  disable(orgId: string, endpointId: string, at: string): Promise<boolean>;
}

/** A delivery with the request body every attempt sends: the event's payload, serialized once. */
export interface StoredDelivery {
  orgId: string;
  delivery: WebhookDelivery;
  body: string;
}

/** The fields an attempt's outcome changes; `undefined` removes a field. */
export type DeliveryChanges = Partial<Omit<WebhookDelivery, 'id' | 'endpointId' | 'eventId' | 'eventType' | 'createdAt'>>;

export interface WebhookDeliveryStore {
  /** Records a delivery after its first attempt; false when it is already recorded (the event was handled before). */
  create(stored: StoredDelivery, expiresAt: number): Promise<boolean>;
  /**
   * Records first attempts that succeeded, together and unconditionally: whatever a duplicate of the event recorded
   * before, the event has now been delivered.
   */
  recordDelivered(stored: readonly StoredDelivery[], expiresAt: number): Promise<void>;
  get(orgId: string, endpointId: string, deliveryId: string): Promise<StoredDelivery | undefined>;
  /** Applies an attempt's outcome if the delivery is still PENDING after `expectedAttempts`; false otherwise. */
  recordAttempt(orgId: string, endpointId: string, deliveryId: string, expectedAttempts: number, changes: DeliveryChanges): Promise<boolean>;
  /** DELIVERED or DEAD_LETTERED back to PENDING for a replay; the reopened delivery, 'pending' or 'missing'. */
  reopen(orgId: string, endpointId: string, deliveryId: string, at: string): Promise<WebhookDelivery | 'pending' | 'missing'>;
  /** Up to `limit` deliveries of the endpoint in `createdAt` order, optionally of one state only. */
  /** Up to `limit` deliveries in `direction` order, after the delivery `after` when given. */
  list(
    orgId: string,
    endpointId: string,
    options: { state?: DeliveryState | undefined; direction: 'asc' | 'desc'; limit: number; after?: string | undefined },
  ): Promise<WebhookDelivery[]>;
}

/** One attempt of a delivery, scheduled on the delivery queue. */
export interface AttemptRequest {
  kind: 'webhook.attempt';
  orgId: string;
  endpointId: string;
  deliveryId: string;
  /** The attempt's number; it goes ahead only if the delivery has had exactly `attempt - 1`. */
  attempt: number;
  /** Position in the retry schedule: the delay after this attempt fails is the schedule's entry at this index. */
  step: number;
  /** Epoch ms before which the attempt must not be made. */
  notBefore: number;
}

/** Where later delivery attempts wait until they are due. */
export type DeliveryQueue = ScheduledQueue<AttemptRequest>;
