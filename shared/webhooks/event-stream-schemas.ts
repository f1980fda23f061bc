import * as z from 'zod';
import { sseEventName, sseEventNames } from './event-stream.ts';
import { eventSchemas } from './event-catalog.ts';

const knownNames: ReadonlySet<string> = new Set(sseEventNames);

/** `types=a,b`: SSE event names, or the catalog's names (`knowledge_store.updated` as on webhooks); as SSE names. */
const typeFilter = z
  .string()
  .transform((raw) => raw.split(',').map((name) => name.trim()).filter(Boolean).map(sseEventName))
  .refine((names) => names.length > 0 && names.every((name) => knownNames.has(name)), {
    error: `must be a comma-separated list of event types: ${sseEventNames.join(', ')}`,
  })
  .transform((names) => new Set(names));

export const eventStreamQuery = z.object({
  types: typeFilter.optional(),
  /** For clients that cannot set the Last-Event-ID header; the header wins when both are sent. */
  lastEventId: z.string().optional(),
});

/**
 * The `data:` of one event on the stream: a domain event's payload (its `event:` line names the type, its `id:` is
 * the cursor to resume from). Comments (`:`) carry heartbeats and notices; an `error` event the envelope.
 */
export const streamedEventSchema = z.union(Object.values(eventSchemas));
