import { setTimeout as sleep } from 'node:timers/promises';
import { watchCredential } from '../identity/credential-watch.ts';
import type { Config } from '../platform/config.ts';
import { ValidationError } from '../platform/errors.ts';
import { eventTypes } from './event-catalog.ts';
import type { EventLogStore, LoggedEvent, LogPosition } from '../events/ports.ts';
import type { Clock } from '../platform/clock.ts';
import { maxItemsPerBatchWrite } from '../platform/store/dynamo.ts';
import type { DomainEvent } from '../events/events.ts';

/**
 * The organization's real-time event stream (`GET /v1/chat/events/stream`, docs/event-stream.md): a consumer of the
 * table's stream appends every domain event to the organization's event log, and each open stream polls that log.
 *
 * Log writes of concurrent writers become visible out of order, so a reader cannot simply continue after the last
 * entry it saw. Three rules make "nothing missed" hold:
 * - a writer makes sure each event has an entry that became visible within a third of the overlap after the time it
 *   was logged at (a slower write is repeated with a fresh time);
 * - a reader that polled at time t reads again from t − overlap next time, and sends only what it has not sent;
 * - a reader holds back entries logged after its poll began, so an id it sends never runs ahead of what is settled.
 * The remaining two thirds of the overlap absorb clock differences between writers and readers.
 */

export interface EventStreamSettings {
  pollMs: number;
  /** How often an open stream checks its credential again. */
  reauthorizeMs: number;
  overlapMs: number;
  heartbeatMs: number;
  maxDurationMs: number;
  retentionMs: number;
}

export function eventStreamSettings(
  config: Pick<
    Config,
    | 'EVENT_STREAM_POLL_MS'
    | 'EVENT_STREAM_REAUTHORIZE_MS'
    | 'EVENT_STREAM_OVERLAP_MS'
    | 'EVENT_STREAM_HEARTBEAT_MS'
    | 'EVENT_STREAM_MAX_SECONDS'
    | 'EVENT_LOG_RETENTION_HOURS'
  >,
): EventStreamSettings {
  return {
    pollMs: config.EVENT_STREAM_POLL_MS,
    reauthorizeMs: config.EVENT_STREAM_REAUTHORIZE_MS,
    overlapMs: config.EVENT_STREAM_OVERLAP_MS,
    heartbeatMs: config.EVENT_STREAM_HEARTBEAT_MS,
    maxDurationMs: config.EVENT_STREAM_MAX_SECONDS * 1000,
    retentionMs: config.EVENT_LOG_RETENTION_HOURS * 60 * 60 * 1000,
  };
}

/** The `retry:` hint: how long a client waits before it reconnects. */
const reconnectDelayMs = 1000;
/** Log entries per read; a backlog is sent page by page. */
const logPageSize = 500;
/** Attempts at a log write that is visible in time before the event is handed back for a later retry. */
const maxLogAttempts = 3;
/** A Last-Event-ID this far ahead of the server's clock was not sent by this stream. */
const futureCursorToleranceMs = 60_000;

/** The spec names one event differently on the SSE stream than on webhooks. */
const sseNames: Readonly<Record<string, string>> = { 'knowledge_store.updated': 'knowledge.store.updated' };

/** The `event:` name of a domain event type on the SSE stream. */
export const sseEventName = (type: string): string => sseNames[type] ?? type;

export const sseEventNames: readonly string[] = eventTypes.map(sseEventName);

/**
 * An SSE `id:`: the time the event was logged (epoch ms, 13 digits) and its event id, e.g.
 * `1763719200123-0190a1b2-…`; heartbeats carry the time alone. Clients treat it as opaque.
 */
export function formatCursor(loggedAt: number, eventId?: string): string {
  const time = String(loggedAt).padStart(13, '0');
  return eventId === undefined ? time : `${time}-${eventId}`;
}

const cursorPattern = /^(\d{13})(?:-([A-Za-z0-9_-]{1,128}))?$/;

export function parseCursor(cursor: string): LogPosition | undefined {
  const match = cursorPattern.exec(cursor);
  if (!match) return undefined;
  return { loggedAt: Number(match[1]), ...(match[2] === undefined ? {} : { eventId: match[2] }) };
}

/** Log order: by time, then event id; a position without an event id comes after every entry of its millisecond. */
export function comparePositions(a: LogPosition, b: LogPosition): number {
  if (a.loggedAt !== b.loggedAt) return a.loggedAt - b.loggedAt;
  if (a.eventId === b.eventId) return 0;
  if (a.eventId === undefined) return 1;
  if (b.eventId === undefined) return -1;
  return a.eventId < b.eventId ? -1 : 1;
}

const positionOf = (entry: LoggedEvent): LogPosition => ({ loggedAt: entry.loggedAt, eventId: entry.event.eventId });

/** The SSE framing. A frame without `data` dispatches no event; one with an `id` still moves the client's Last-Event-ID. */
export const sseFrame = {
  event: (cursor: string, name: string, payload: unknown): string => `id: ${cursor}\nevent: ${name}\ndata: ${JSON.stringify(payload)}\n\n`,
  comment: (text: string): string => `: ${text}\n\n`,
  checkpoint: (cursor: string, text: string): string => `: ${text}\nid: ${cursor}\n\n`,
  retry: (ms: number): string => `retry: ${ms}\n\n`,
  /** The last frame of a stream refused mid-way: an `error` event carrying the error envelope, and no `id:`. */
  error: (envelope: unknown): string => `event: error\ndata: ${JSON.stringify(envelope)}\n\n`,
};

export interface EventStreamStart {
  /** The stream sends entries logged after this position. */
  after: LogPosition;
  /** Told to the client first, as an SSE comment. */
  notice?: string;
}

/**
 * Where a stream begins: with no (or a blank) Last-Event-ID, at the entries logged from now on; otherwise an
 * overlap before the cursor (entries logged then may have become visible after it was sent, so a few events may come
 * again), but never before the oldest retained entry. A malformed cursor is a ValidationError, before the stream starts.
 */
export function startOfEventStream(
  lastEventId: string | undefined,
  nowMs: number,
  settings: Pick<EventStreamSettings, 'overlapMs' | 'retentionMs'>,
): EventStreamStart {
  const given = lastEventId?.trim();
  if (!given) return { after: { loggedAt: nowMs - 1 } };
  const cursor = parseCursor(given);
  if (!cursor || cursor.loggedAt > nowMs + futureCursorToleranceMs) {
    throw new ValidationError('Last-Event-ID is not an id this event stream sent.', {
      details: [{ field: 'Last-Event-ID', message: 'must be the id: of an event or heartbeat of this stream' }],
    });
  }
  const oldest = nowMs - settings.retentionMs;
  const after = { loggedAt: Math.max(cursor.loggedAt - settings.overlapMs - 1, oldest) };
  if (cursor.loggedAt >= oldest) return { after };
  const hours = settings.retentionMs / 3_600_000;
  return { after, notice: `Last-Event-ID is older than the ${hours}-hour retention: resuming from the oldest retained event; earlier events may be missing.` };
}

export type ReadEventLog = (after: LogPosition, limit: number) => Promise<{ entries: LoggedEvent[]; more: boolean }>;

/** What one stream has read of its organization's event log, and which of the events it may read again it has sent. */
export class EventLogReader {
  private after: LogPosition;
  private readonly overlapMs: number;
  /** Sent events whose entries lie after `after` (a later read returns them again), by event id, at their latest entry. */
  private readonly sent = new Map<string, LogPosition>();

  constructor(start: LogPosition, overlapMs: number) {
    this.after = start;
    this.overlapMs = overlapMs;
  }

  /**
   * One poll begun at `startedAt`: the entries not sent yet, in log order, and whether the log was read up to now
   * (false while a backlog remains: poll again at once).
   */
  async poll(read: ReadEventLog, startedAt: number): Promise<{ fresh: LoggedEvent[]; caughtUp: boolean }> {
    // Every entry logged up to here is visible by now; later ones may still appear, so they are read again next time.
    const settled = startedAt - this.overlapMs;
    const fresh: LoggedEvent[] = [];
    let position = this.after;
    for (;;) {
      const { entries, more } = await read(position, logPageSize);
      // Entries logged after the poll began wait for the next one, so that no id sent runs ahead of what is settled.
      const current = entries.filter((entry) => entry.loggedAt <= startedAt);
      for (const entry of current) {
        const sentAt = this.sent.get(entry.event.eventId);
        // An event logged twice (a slow write repeated at a fresh time) is remembered until its last entry is
        // settled: forgetting it with its first entry would send the repeat on the next read of the overlap.
        if (sentAt === undefined) fresh.push(entry);
        if (sentAt === undefined || comparePositions(positionOf(entry), sentAt) > 0) this.sent.set(entry.event.eventId, positionOf(entry));
      }
      const last = entries.at(-1);
      if (!more || !last || current.length < entries.length) break;
      position = positionOf(last);
      if (last.loggedAt <= settled) {
        // A backlog of settled entries: the next read continues right after them, without an overlap.
        this.advanceTo(position);
        return { fresh, caughtUp: false };
      }
    }
    this.advanceTo({ loggedAt: settled });
    return { fresh, caughtUp: true };
  }

  /** A Last-Event-ID from which a new stream misses nothing this reader has passed. */
  checkpoint(): string {
    return formatCursor(this.after.loggedAt + this.overlapMs);
  }

  private advanceTo(position: LogPosition): void {
    if (comparePositions(position, this.after) <= 0) return;
    this.after = position;
    for (const [eventId, loggedAt] of this.sent) if (comparePositions(loggedAt, position) <= 0) this.sent.delete(eventId);
  }
}

/**
 * Appends events to their organizations' logs, in writes of up to 25 entries (one request each, side by side), the
 * entries of a write all logged at its time. A write that took longer than a third of the overlap may have become
 * visible after readers passed its time, so its events are logged again at a fresh time (readers send an event
 * once per stream; clients deduplicate on `eventId` across streams).
 */
export async function logEvents(
  deps: { eventLog: EventLogStore; clock: Clock },
  events: readonly DomainEvent[],
  settings: Pick<EventStreamSettings, 'overlapMs' | 'retentionMs'>,
): Promise<void> {
  const deadlineMs = settings.overlapMs / 3;
  const writes: DomainEvent[][] = [];
  for (let start = 0; start < events.length; start += maxItemsPerBatchWrite) writes.push(events.slice(start, start + maxItemsPerBatchWrite));
  await Promise.all(
    writes.map(async (written) => {
      for (let attempt = 1; ; attempt += 1) {
        const loggedAt = deps.clock.now().getTime();
        await deps.eventLog.append(
          written.map((event) => ({ loggedAt, event })),
          Math.ceil((loggedAt + settings.retentionMs) / 1000),
        );
        if (deps.clock.now().getTime() - loggedAt <= deadlineMs) return;
        if (attempt === maxLogAttempts) {
          throw new Error(`Event log writes of ${written.map((event) => event.eventId).join(', ')} took longer than ${deadlineMs} ms ${attempt} times.`);
        }
      }
    }),
  );
}

export interface EventStreamOutput {
  /** Settles when more may be sent (a slow client holds the stream back rather than filling memory). */
  send(frame: string): Promise<void>;
  /** Aborted when the client goes away. */
  signal: AbortSignal;
}

export interface EventStreamRequest {
  orgId: string;
  start: EventStreamStart;
  /** SSE event names to send; all when absent. */
  types?: ReadonlySet<string> | undefined;
  /** Checks the stream's credential again; its rejection (a deleted key, an expired token) ends the stream. */
  reauthorize(): Promise<void>;
}

/**
 * Sends the organization's events as they are logged, until the client goes away or `maxDurationMs` has passed
 * (the client then reconnects with Last-Event-ID). An idle stream sends a heartbeat comment carrying a cursor, so
 * that a reconnect after a quiet spell (or with a narrow `types` filter) starts near now. Every `reauthorizeMs` the
 * credential is checked again: a credential no longer valid, like a failed log read, ends it with that error.
 */
export async function streamEvents(
  deps: { eventLog: EventLogStore; clock: Clock },
  request: EventStreamRequest,
  settings: EventStreamSettings,
  output: EventStreamOutput,
): Promise<void> {
  const now = () => deps.clock.now().getTime();
  const openedAt = now();
  const reader = new EventLogReader(request.start.after, settings.overlapMs);
  const read: ReadEventLog = (after, limit) => deps.eventLog.read(request.orgId, after, limit);
  const credential = watchCredential(request.reauthorize, settings.reauthorizeMs);
  const ended = AbortSignal.any([output.signal, credential.refused]);
  try {
    await output.send(sseFrame.retry(reconnectDelayMs));
    if (request.start.notice) await output.send(sseFrame.comment(request.start.notice));
    let lastSentAt = openedAt;
    while (!ended.aborted && now() - openedAt < settings.maxDurationMs) {
      const { fresh, caughtUp } = await reader.poll(read, now());
      credential.refused.throwIfAborted();
      for (const entry of fresh) {
        const name = sseEventName(entry.event.type);
        if (request.types && !request.types.has(name)) continue;
        await output.send(sseFrame.event(formatCursor(entry.loggedAt, entry.event.eventId), name, entry.event.payload));
        lastSentAt = now();
      }
      if (now() - lastSentAt >= settings.heartbeatMs) {
        await output.send(sseFrame.checkpoint(reader.checkpoint(), 'heartbeat'));
        lastSentAt = now();
      }
      const remainingMs = settings.maxDurationMs - (now() - openedAt);
      if (caughtUp && remainingMs > 0) await sleep(Math.min(settings.pollMs, remainingMs), undefined, { signal: ended }).catch(() => undefined);
    }
    credential.refused.throwIfAborted();
    if (output.signal.aborted) return;
    await output.send(sseFrame.checkpoint(reader.checkpoint(), 'this stream has reached its time limit; reconnect with Last-Event-ID'));
  } finally {
    credential.stop();
  }
}
