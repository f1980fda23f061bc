/** The ports of the events context: the interfaces its use cases depend on, implemented by its adapters (issue 22 split shared/ports.ts by context). */
import type { DomainEvent } from './events.ts';

/** Where an entry sits in its organization's event log: ordered by the time it was logged (epoch ms), then event id. */
export interface LogPosition {
  loggedAt: number;
  /** Without it, the position is after every entry logged in that millisecond. */
  eventId?: string | undefined;
}

/** A domain event as its organization's event log holds it, for the SSE event stream. */
export interface LoggedEvent {
  loggedAt: number;
  event: DomainEvent;
}

export interface EventLogStore {
  /** Adds the events to their organizations' logs, each at its `loggedAt`, 25 a request; the entries are kept until `expiresAt` (epoch s). */
  append(entries: readonly LoggedEvent[], expiresAt: number): Promise<void>;
  /** Up to `limit` entries after `after`, in log order, strongly consistent; `more` when others may follow. */
  read(orgId: string, after: LogPosition, limit: number): Promise<{ entries: LoggedEvent[]; more: boolean }>;
}
