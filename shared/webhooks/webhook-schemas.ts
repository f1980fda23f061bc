import * as z from 'zod';
import { eventTypes } from './event-catalog.ts';
import { booleanQuery, idParams, instant, optionalText, pageOf, paginationQuery, sortQuery } from '../platform/schemas/common.ts';

/** A webhook endpoint as the API shows it; its signing secrets never appear after creation or rotation. */
export interface WebhookEndpoint {
  id: string;
  orgId: string;
  url: string;
  /** Event types it receives; `*` for all. */
  events: string[];
  description?: string | undefined;
  enabled: boolean;
  createdAt: string;
  updatedAt: string;
}

/** Subscribes an endpoint to every event type, present and future; it must then be the only entry. */
export const allEvents = '*';

const knownEventTypes: ReadonlySet<string> = new Set(eventTypes);

/**
 * The URL's form only: http or https. Whether http is allowed (loopback hosts, where the deployment allows
 * loopback egress) and whether the host may be reached depend on configuration and DNS, so the domain checks them
 * (`shared/webhooks/webhooks.ts`).
 */
export const webhookUrl = z
  .string()
  .trim()
  .max(2048)
  .refine(
    (raw) => {
      try {
        const url = new URL(raw);
        return (url.protocol === 'https:' || url.protocol === 'http:') && url.hostname !== '';
      } catch {
        return false;
      }
    },
    { error: 'must be an https URL (http only for loopback hosts where the deployment allows it)' },
  );

/** Event types of `shared/webhooks/event-catalog.ts`, or exactly `["*"]`; duplicates removed, first occurrence kept. */
export const webhookEvents = z
  .array(z.string().refine((type) => type === allEvents || knownEventTypes.has(type), { error: `must be "*" or one of ${eventTypes.join(', ')}` }))
  .min(1, { error: 'must name at least one event type, or "*"' })
  .max(100)
  .transform((list) => [...new Set(list)])
  .superRefine((list, ctx) => {
    if (list.includes(allEvents) && list.length > 1) ctx.addIssue({ code: 'custom', message: 'must be exactly ["*"] when "*" is used' });
  });

export const createWebhookBody = z.strictObject({
  url: webhookUrl,
  events: webhookEvents,
  description: optionalText(500).optional(),
  enabled: z.boolean().default(true),
});

export const updateWebhookBody = z
  .strictObject({
    url: webhookUrl,
    events: webhookEvents,
    /** `null` clears it. */
    description: optionalText(500).nullable(),
    enabled: z.boolean(),
  })
  .partial()
  .superRefine((body, ctx) => {
    if (Object.keys(body).length === 0) ctx.addIssue({ code: 'custom', path: [], message: 'must change at least one field' });
  });

export const listWebhooksQuery = paginationQuery.extend({
  sort: sortQuery(['createdAt', 'updatedAt', 'url'], 'createdAt:desc'),
  enabled: booleanQuery.optional(),
});

export type CreateWebhookInput = z.output<typeof createWebhookBody>;
export type UpdateWebhookInput = z.output<typeof updateWebhookBody>;
export type ListWebhooksQuery = z.output<typeof listWebhooksQuery>;

/** The create response: the endpoint with its signing secret, shown only here (and in idempotent replays). */
export type CreatedWebhookEndpoint = WebhookEndpoint & { secret: string };

/** The rotate-secret response. */
export interface RotatedWebhookSecret {
  id: string;
  secret: string;
  /** RFC 3339: until then the previous secret keeps signing too. */
  previousSecretValidUntil: string;
}

export const deliveryStates = ['PENDING', 'DELIVERED', 'DEAD_LETTERED'] as const;
export type DeliveryState = (typeof deliveryStates)[number];

/** One event's delivery to one endpoint: every attempt of it, retries and replays included. */
export interface WebhookDelivery {
  /** Ordered by the event's time; the same event and endpoint always give the same id. */
  id: string;
  endpointId: string;
  /** Sent as `webhook-id`; also the payload's `eventId`. */
  eventId: string;
  eventType: string;
  state: DeliveryState;
  /** Requests made so far. */
  attempts: number;
  /** HTTP status of the last attempt; absent when it got no response (timeout, network error, refused address). */
  lastStatusCode?: number | undefined;
  /** Why the last attempt failed; absent once delivered. */
  lastError?: string | undefined;
  lastAttemptAt?: string | undefined;
  /** When the next attempt is due; PENDING only. */
  nextAttemptAt?: string | undefined;
  deliveredAt?: string | undefined;
  deadLetteredAt?: string | undefined;
  /** When the event happened. */
  createdAt: string;
  updatedAt: string;
}

export const deliveryParams = idParams.extend({ deliveryId: z.uuid({ error: 'must be a UUID' }) });

export const listDeliveriesQuery = paginationQuery.extend({
  sort: sortQuery(['createdAt'], 'createdAt:desc'),
  state: z.enum(deliveryStates, { error: `must be one of ${deliveryStates.join(', ')}` }).optional(),
  /** The `nextCursor` of the previous page: the next page is then read from where that one ended. */
  cursor: z.string().max(512).optional(),
});

export type ListDeliveriesQuery = z.output<typeof listDeliveriesQuery>;

/**
 * A page of deliveries. An endpoint can have hundreds of thousands of them, and counting would read them all, so
 * this list says whether more follow instead of giving totals.
 */
export interface DeliveryPage {
  data: WebhookDelivery[];
  /** `nextCursor` while more follow: pass it as `cursor` to read the next page without reading this one again. */
  pagination: { page: number; limit: number; hasMore: boolean; nextCursor?: string };
}

export const webhookEndpointSchema = z.object({
  id: z.uuid(),
  orgId: z.string(),
  url: z.string(),
  events: z.array(z.string()),
  description: z.string().optional(),
  enabled: z.boolean(),
  createdAt: instant,
  updatedAt: instant,
}) satisfies z.ZodType<WebhookEndpoint>;

export const webhookEndpointPage = pageOf(webhookEndpointSchema);

export const createdWebhookEndpointSchema = webhookEndpointSchema.extend({ secret: z.string() }) satisfies z.ZodType<CreatedWebhookEndpoint>;

export const rotatedWebhookSecretSchema = z.object({
  id: z.uuid(),
  secret: z.string(),
  previousSecretValidUntil: instant,
}) satisfies z.ZodType<RotatedWebhookSecret>;

export const webhookDeliverySchema = z.object({
  /** UUID-shaped, derived from the event and the endpoint. */
  id: z.string(),
  endpointId: z.uuid(),
  eventId: z.string(),
  eventType: z.string(),
  state: z.enum(deliveryStates),
  attempts: z.int().min(0),
  lastStatusCode: z.int().optional(),
  lastError: z.string().optional(),
  lastAttemptAt: instant.optional(),
  nextAttemptAt: instant.optional(),
  deliveredAt: instant.optional(),
  deadLetteredAt: instant.optional(),
  createdAt: instant,
  updatedAt: instant,
}) satisfies z.ZodType<WebhookDelivery>;

export const deliveryPageSchema = z.object({
  data: z.array(webhookDeliverySchema),
  pagination: z.object({ page: z.int().min(1), limit: z.int().min(1), hasMore: z.boolean(), nextCursor: z.string().optional() }),
}) satisfies z.ZodType<DeliveryPage>;
