import type { DomainEvent } from '../events/events.ts';
import { recordedEvent } from '../events/outbox.ts';
import { eventsOfMessageItem } from '../conversations/session-events.ts';

/**
 * The domain events a newly written item of the table's stream stands for, as the event relay publishes them and
 * the event log keeps them: an outbox item is one event as recorded; a message item is its own events (derived by
 * conversations, ids included, so that a replayed stream record yields the very same events). Other items stand
 * for none.
 */
export function eventsOfItem(item: Record<string, unknown>): DomainEvent[] {
  if (item.entity === 'outbox') return [recordedEvent(item)];
  if (item.entity === 'message') return eventsOfMessageItem(item);
  return [];
}
