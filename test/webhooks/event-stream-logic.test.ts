import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Clock } from '../../shared/platform/clock.ts';
import {
  comparePositions,
  EventLogReader,
  formatCursor,
  logEvents,
  parseCursor,
  sseFrame,
  startOfEventStream,
  streamEvents,
  type EventStreamSettings,
  type ReadEventLog,
} from '../../shared/webhooks/event-stream.ts';
import type { DomainEvent } from '../../shared/events/events.ts';
import { ValidationError } from '../../shared/platform/errors.ts';
import type { EventLogStore, LoggedEvent } from '../../shared/events/ports.ts';

const overlapMs = 1000;
const hour = 3_600_000;

const domainEvent = (eventId: string, type = 'session.updated'): DomainEvent => ({
  eventId,
  type,
  orgId: 'acme',
  createdAt: '2026-11-21T10:00:00.000Z',
  payload: { eventId },
});

/** A log whose entries become visible at a time of their own, read as of the current `time`. */
class SimulatedLog {
  time = 0;
  private readonly entries: (LoggedEvent & { visibleAt: number })[] = [];

  add(eventId: string, loggedAt: number, visibleAt = loggedAt): void {
    this.entries.push({ loggedAt, event: domainEvent(eventId), visibleAt });
  }

  read: ReadEventLog = async (after, limit) => {
    const visible = this.entries
      .filter((entry) => entry.visibleAt <= this.time)
      .map(({ loggedAt, event }) => ({ loggedAt, event }))
      .filter((entry) => comparePositions({ loggedAt: entry.loggedAt, eventId: entry.event.eventId }, after) > 0)
      .sort((a, b) => comparePositions({ loggedAt: a.loggedAt, eventId: a.event.eventId }, { loggedAt: b.loggedAt, eventId: b.event.eventId }));
    return { entries: visible.slice(0, limit), more: visible.length > limit };
  };

  /** One poll of `reader` at `time`: the ids it sends. */
  async poll(reader: EventLogReader, time: number): Promise<string[]> {
    this.time = time;
    return (await reader.poll(this.read, time)).fresh.map((entry) => entry.event.eventId);
  }
}

describe('cursors', () => {
  it('carry the log time and the event id, and parse back', () => {
    const cursor = formatCursor(1_763_719_200_123, '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b');
    expect(cursor).toBe('1763719200123-0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b');
    expect(parseCursor(cursor)).toEqual({ loggedAt: 1_763_719_200_123, eventId: '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b' });
    expect(parseCursor(formatCursor(42))).toEqual({ loggedAt: 42 });
  });

  it.each(['', 'abc', '123', '1763719200123-', '1763719200123-a b', '17637192001234', `1763719200123-${'x'.repeat(129)}`])('rejects %j', (cursor) => {
    expect(parseCursor(cursor)).toBeUndefined();
  });

  it('order log positions by time, then event id, a bare time after its whole millisecond', () => {
    expect(comparePositions({ loggedAt: 1, eventId: 'b' }, { loggedAt: 2, eventId: 'a' })).toBeLessThan(0);
    expect(comparePositions({ loggedAt: 1, eventId: 'a' }, { loggedAt: 1, eventId: 'b' })).toBeLessThan(0);
    expect(comparePositions({ loggedAt: 1 }, { loggedAt: 1, eventId: 'z' })).toBeGreaterThan(0);
    expect(comparePositions({ loggedAt: 1 }, { loggedAt: 2, eventId: 'a' })).toBeLessThan(0);
    expect(comparePositions({ loggedAt: 1, eventId: 'a' }, { loggedAt: 1, eventId: 'a' })).toBe(0);
  });
});

describe('sseFrame', () => {
  it('frames an event as id, event and one data line, whatever the payload holds', () => {
    expect(sseFrame.event('1-e', 'message.added', { content: 'two\nlines\r\n' })).toBe(
      'id: 1-e\nevent: message.added\ndata: {"content":"two\\nlines\\r\\n"}\n\n',
    );
  });

  it('frames comments, checkpoints and the retry hint', () => {
    expect(sseFrame.comment('hi')).toBe(': hi\n\n');
    expect(sseFrame.checkpoint('123', 'heartbeat')).toBe(': heartbeat\nid: 123\n\n');
    expect(sseFrame.retry(1000)).toBe('retry: 1000\n\n');
  });
});

describe('startOfEventStream', () => {
  const now = 1_763_719_200_000;
  const settings = { overlapMs, retentionMs: 24 * hour };

  it('starts with the entries logged from now on when there is no Last-Event-ID', () => {
    expect(startOfEventStream(undefined, now, settings)).toEqual({ after: { loggedAt: now - 1 } });
    expect(startOfEventStream(' ', now, settings)).toEqual({ after: { loggedAt: now - 1 } });
  });

  it('resumes an overlap before the cursor', () => {
    expect(startOfEventStream(formatCursor(now - 5000, 'e1'), now, settings)).toEqual({ after: { loggedAt: now - 5000 - overlapMs - 1 } });
    expect(startOfEventStream(` ${formatCursor(now - 5000)} `, now, settings)).toEqual({ after: { loggedAt: now - 5000 - overlapMs - 1 } });
  });

  it('resumes a cursor older than the retention from the oldest retained entry, and says so', () => {
    const start = startOfEventStream(formatCursor(now - 25 * hour, 'e1'), now, settings);
    expect(start.after).toEqual({ loggedAt: now - 24 * hour });
    expect(start.notice).toMatch(/older than the 24-hour retention/);
    expect(startOfEventStream(formatCursor(now - 24 * hour + 10, 'e1'), now, settings)).toEqual({ after: { loggedAt: now - 24 * hour } });
  });

  it.each(['nope', '12-e', formatCursor(now + 61_000, 'e1')])('refuses %j with a ValidationError naming Last-Event-ID', (cursor) => {
    const attempt = () => startOfEventStream(cursor, now, settings);
    expect(attempt).toThrow(ValidationError);
    try {
      attempt();
    } catch (error) {
      expect((error as ValidationError).details).toEqual([{ field: 'Last-Event-ID', message: expect.any(String) }]);
    }
  });
});

describe('EventLogReader', () => {
  it('sends each entry once, though every poll reads the overlap again', async () => {
    const log = new SimulatedLog();
    const reader = new EventLogReader({ loggedAt: 0 }, overlapMs);
    log.add('a', 100);
    log.add('b', 200);
    expect(await log.poll(reader, 300)).toEqual(['a', 'b']);
    log.add('c', 400);
    expect(await log.poll(reader, 500)).toEqual(['c']);
    expect(await log.poll(reader, 600)).toEqual([]);
  });

  it('sends an entry that became visible after later ones were sent', async () => {
    const log = new SimulatedLog();
    const reader = new EventLogReader({ loggedAt: 0 }, overlapMs);
    log.add('late', 1000, 1300);
    log.add('early', 1100);
    expect(await log.poll(reader, 1200)).toEqual(['early']);
    expect(await log.poll(reader, 1400)).toEqual(['late']);
  });

  it('holds back entries logged after the poll began until the next poll', async () => {
    const log = new SimulatedLog();
    const reader = new EventLogReader({ loggedAt: 0 }, overlapMs);
    // A writer whose clock runs ahead of the reader's.
    log.add('ahead', 1500, 1000);
    log.add('before', 900);
    expect(await log.poll(reader, 1200)).toEqual(['before']);
    expect(await log.poll(reader, 1600)).toEqual(['ahead']);
  });

  it('sends once an event whose slow log write was repeated at a fresh time, on every poll of the overlap', async () => {
    // The first write took longer than a third of the overlap, so logEvents logged the event again 400 ms later:
    // two entries, one event. Polls every 100 ms re-read the overlap behind them until both are settled.
    const log = new SimulatedLog();
    const reader = new EventLogReader({ loggedAt: 0 }, overlapMs);
    log.add('slow', 1000);
    log.add('slow', 1400);
    const sent: string[] = [];
    for (let time = 1000; time <= 1400 + 2 * overlapMs; time += 100) sent.push(...(await log.poll(reader, time)));
    expect(sent).toEqual(['slow']);
  });

  it('reads a backlog page by page, continuing exactly where the last page ended', async () => {
    const log = new SimulatedLog();
    const ids = Array.from({ length: 1200 }, (_, index) => `e${String(index).padStart(4, '0')}`);
    ids.forEach((id, index) => log.add(id, 1000 + index));
    const reader = new EventLogReader({ loggedAt: 0 }, overlapMs);
    log.time = 10_000;
    const reads: number[] = [];
    const countingRead: ReadEventLog = async (after, limit) => {
      const page = await log.read(after, limit);
      reads.push(page.entries.length);
      return page;
    };
    const sent: string[] = [];
    let caughtUp = false;
    for (let poll = 0; !caughtUp && poll < 10; poll += 1) {
      const result = await reader.poll(countingRead, 10_000);
      sent.push(...result.fresh.map((entry) => entry.event.eventId));
      caughtUp = result.caughtUp;
    }
    expect(caughtUp).toBe(true);
    expect(sent).toEqual(ids);
    expect(reads).toEqual([500, 500, 200]);
  });

  it('gives a checkpoint from which a new stream misses nothing it has passed', async () => {
    const log = new SimulatedLog();
    const reader = new EventLogReader({ loggedAt: 0 }, overlapMs);
    log.add('a', 2000);
    await log.poll(reader, 5000);
    const checkpoint = reader.checkpoint();
    // Logged before the poll, visible only after it.
    log.add('b', 4800, 5050);
    const resumed = new EventLogReader(startOfEventStream(checkpoint, 5200, { overlapMs, retentionMs: hour }).after, overlapMs);
    expect(await log.poll(resumed, 5200)).toEqual(['b']);
  });

  /**
   * Writers whose entries become visible up to a third of the overlap after their log time, with clocks up to 60%
   * of the overlap off the reader's, some of whose writes were slow and logged again (by logEvents, at the time the
   * first write ended, up to two thirds of the overlap later); a client that drops the connection at any point and
   * resumes with the last id it received (an event's or a heartbeat's) gets every event, and each connection sends
   * an event at most once.
   */
  it('misses nothing across a reconnect, whatever the order in which writes become visible', async () => {
    const writes = fc.array(
      fc.record({
        start: fc.integer({ min: 2000, max: 20_000 }),
        delay: fc.integer({ min: 0, max: Math.floor(overlapMs / 3) }),
        skew: fc.integer({ min: -0.6 * overlapMs, max: 0.6 * overlapMs }),
        repeat: fc.option(fc.record({ after: fc.integer({ min: Math.floor(overlapMs / 3) + 1, max: Math.floor((2 * overlapMs) / 3) }), delay: fc.integer({ min: 0, max: Math.floor(overlapMs / 3) }) })),
      }),
      { minLength: 1, maxLength: 60 },
    );
    const gaps = fc.array(fc.integer({ min: 1, max: 1500 }), { minLength: 5, maxLength: 60 });
    await fc.assert(
      fc.asyncProperty(writes, gaps, fc.nat(), fc.nat(), fc.boolean(), async (entries, pollGaps, dropAt, received, viaHeartbeat) => {
        const log = new SimulatedLog();
        entries.forEach((entry, index) => {
          const eventId = `e${String(index).padStart(2, '0')}`;
          log.add(eventId, entry.start + entry.skew, entry.start + entry.delay);
          if (entry.repeat) log.add(eventId, entry.start + entry.repeat.after + entry.skew, entry.start + entry.repeat.after + entry.repeat.delay);
        });
        const pollTimes = pollGaps.reduce<number[]>((times, gap) => [...times, (times.at(-1) ?? 0) + gap], []);
        const dropPoll = 1 + (dropAt % (pollTimes.length - 1));

        const first = new EventLogReader({ loggedAt: -1 }, overlapMs);
        const receivedFirst: LoggedEvent[] = [];
        let lastId = '';
        for (const [index, time] of pollTimes.slice(0, dropPoll + 1).entries()) {
          log.time = time;
          const { fresh } = await first.poll(log.read, time);
          const arrived = index === dropPoll ? fresh.slice(0, received % (fresh.length + 1)) : fresh;
          receivedFirst.push(...arrived);
          for (const entry of arrived) lastId = formatCursor(entry.loggedAt, entry.event.eventId);
          if (index < dropPoll && (viaHeartbeat || lastId === '')) lastId = first.checkpoint();
        }

        const resumedAt = pollTimes[dropPoll] as number;
        const second = new EventLogReader(startOfEventStream(lastId, resumedAt, { overlapMs, retentionMs: hour }).after, overlapMs);
        const sentSecond: LoggedEvent[] = [];
        for (let time = resumedAt; time <= 25_000; time += 700) {
          log.time = time;
          sentSecond.push(...(await second.poll(log.read, time)).fresh);
        }

        // The one exception docs/event-stream.md states: a repeat that became visible more than the overlap after
        // the first entry's time may come again, once the first is settled and forgotten.
        const mayComeTwice = new Set(
          entries.flatMap((entry, index) => (entry.repeat && entry.start + entry.repeat.after + entry.repeat.delay > entry.start + entry.skew + overlapMs ? [`e${String(index).padStart(2, '0')}`] : [])),
        );
        const ids = (list: LoggedEvent[]) => list.map((entry) => entry.event.eventId);
        const sentOnce = (list: LoggedEvent[]) => ids(list).filter((id) => !mayComeTwice.has(id));
        expect(new Set(sentOnce(receivedFirst)).size).toBe(sentOnce(receivedFirst).length);
        expect(new Set(sentOnce(sentSecond)).size).toBe(sentOnce(sentSecond).length);
        expect(new Set([...ids(receivedFirst), ...ids(sentSecond)]).size).toBe(entries.length);
        const cursorTime = (parseCursor(lastId) as { loggedAt: number }).loggedAt;
        for (const entry of sentSecond) expect(entry.loggedAt).toBeGreaterThanOrEqual(cursorTime - overlapMs);
      }),
      { numRuns: 300 },
    );
  });
});

/** An event log of which a test implements only what it uses. */
function fakeEventLog(implemented: Partial<EventLogStore>): EventLogStore {
  const unused = async () => {
    throw new Error('not used by this test');
  };
  return { append: unused, read: unused, ...implemented };
}

/** A clock that moves only when told to. */
function steppingClock(start: number): Clock & { advance(ms: number): void } {
  let now = start;
  return { now: () => new Date(now), advance: (ms) => void (now += ms) };
}

describe('logEvents', () => {
  const settings = { overlapMs: 900, retentionMs: 24 * hour };

  it('logs the events in one write at its time, kept for the retention', async () => {
    const clock = steppingClock(1_000_000);
    const appended: { entries: readonly LoggedEvent[]; expiresAt: number }[] = [];
    const eventLog = fakeEventLog({ append: async (entries: readonly LoggedEvent[], expiresAt: number) => void appended.push({ entries, expiresAt }) });
    await logEvents({ eventLog, clock }, [domainEvent('a'), domainEvent('b')], settings);
    expect(appended).toEqual([
      {
        entries: [
          { loggedAt: 1_000_000, event: domainEvent('a') },
          { loggedAt: 1_000_000, event: domainEvent('b') },
        ],
        expiresAt: 1000 + 24 * 3600,
      },
    ]);
  });

  it('writes up to 25 events at a time, as one BatchWriteItem takes', async () => {
    const clock = steppingClock(1_000_000);
    const sizes: number[] = [];
    const eventLog = fakeEventLog({ append: async (entries: readonly LoggedEvent[]) => void sizes.push(entries.length) });
    await logEvents({ eventLog, clock }, Array.from({ length: 30 }, (_, index) => domainEvent(`e${index}`)), settings);
    expect(sizes).toEqual([25, 5]);
  });

  it('logs the events again at a fresh time when their write took longer than a third of the overlap', async () => {
    const clock = steppingClock(1_000_000);
    const latencies = [301, 300];
    const written: [string, number][][] = [];
    const eventLog = fakeEventLog({
      append: async (entries: readonly LoggedEvent[]) => {
        written.push(entries.map((entry) => [entry.event.eventId, entry.loggedAt]));
        clock.advance(latencies.shift() ?? 0);
      },
    });
    await logEvents({ eventLog, clock }, [domainEvent('a'), domainEvent('b')], settings);
    expect(written).toEqual([
      [['a', 1_000_000], ['b', 1_000_000]],
      [['a', 1_000_301], ['b', 1_000_301]],
    ]);
  });

  it('fails after three slow writes, so that the stream record is retried later', async () => {
    const clock = steppingClock(0);
    const eventLog = fakeEventLog({ append: async () => clock.advance(1000) });
    await expect(logEvents({ eventLog, clock }, [domainEvent('a')], settings)).rejects.toThrow(/took longer than 300 ms 3 times/);
  });
});

describe('streamEvents', () => {
  const settings: EventStreamSettings = { pollMs: 10, reauthorizeMs: 20, overlapMs: 50, heartbeatMs: 40, maxDurationMs: 150, retentionMs: hour };
  const stillValid = async () => undefined;

  it('sends the retry hint, new events, heartbeats with a cursor, and a closing cursor at the end', async () => {
    const log = new SimulatedLog();
    log.time = Number.MAX_SAFE_INTEGER;
    const openedAt = Date.now();
    log.add('e1', openedAt + 5);
    const eventLog = fakeEventLog({ read: (_orgId: string, after, limit) => log.read(after, limit) });
    const frames: string[] = [];
    const output = { send: async (frame: string) => void frames.push(frame), signal: new AbortController().signal };
    await streamEvents({ eventLog, clock: { now: () => new Date() } }, { orgId: 'acme', start: { after: { loggedAt: openedAt - 1 } }, reauthorize: stillValid }, settings, output);

    expect(frames[0]).toBe('retry: 1000\n\n');
    expect(frames.filter((frame) => frame.startsWith('id: '))).toEqual([`id: ${formatCursor(openedAt + 5, 'e1')}\nevent: session.updated\ndata: {"eventId":"e1"}\n\n`]);
    expect(frames.filter((frame) => /^: heartbeat\nid: \d{13}\n\n$/.test(frame)).length).toBeGreaterThanOrEqual(1);
    expect(frames.at(-1)).toMatch(/^: this stream has reached its time limit; reconnect with Last-Event-ID\nid: \d{13}\n\n$/);
  });

  it('sends only the types asked for, under their SSE names', async () => {
    const openedAt = Date.now();
    const eventLog = fakeEventLog({
      read: async () => ({
        entries: [
          { loggedAt: openedAt, event: domainEvent('k', 'knowledge_store.updated') },
          { loggedAt: openedAt, event: domainEvent('s', 'session.updated') },
        ],
        more: false,
      }),
    });
    const frames: string[] = [];
    const output = { send: async (frame: string) => void frames.push(frame), signal: new AbortController().signal };
    const request = { orgId: 'acme', start: { after: { loggedAt: openedAt - 1 } }, types: new Set(['knowledge.store.updated']), reauthorize: stillValid };
    await streamEvents({ eventLog, clock: { now: () => new Date() } }, request, { ...settings, maxDurationMs: 30 }, output);
    expect(frames.filter((frame) => frame.startsWith('id: '))).toEqual([expect.stringContaining('event: knowledge.store.updated\n')]);
  });

  it('stops reading the log when the client goes away', async () => {
    let reads = 0;
    const eventLog = fakeEventLog({
      read: async () => {
        reads += 1;
        return { entries: [], more: false };
      },
    });
    const disconnected = new AbortController();
    const output = { send: async () => undefined, signal: disconnected.signal };
    const streaming = streamEvents(
      { eventLog, clock: { now: () => new Date() } },
      { orgId: 'acme', start: { after: { loggedAt: 0 } }, reauthorize: stillValid },
      { ...settings, maxDurationMs: 60_000 },
      output,
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    disconnected.abort();
    await streaming;
    const readsAtDisconnect = reads;
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(reads).toBe(readsAtDisconnect);
    expect(readsAtDisconnect).toBeGreaterThan(0);
  });

  it('checks the credential every reauthorizeMs, and ends with its refusal', async () => {
    const eventLog = fakeEventLog({ read: async () => ({ entries: [], more: false }) });
    const checks: number[] = [];
    const refusal = new Error('key deleted');
    const reauthorize = async () => {
      checks.push(Date.now());
      if (checks.length === 3) throw refusal;
    };
    const output = { send: async () => undefined, signal: new AbortController().signal };
    const streaming = streamEvents({ eventLog, clock: { now: () => new Date() } }, { orgId: 'acme', start: { after: { loggedAt: 0 } }, reauthorize }, { ...settings, maxDurationMs: 60_000 }, output);
    await expect(streaming).rejects.toBe(refusal);
    expect(checks).toHaveLength(3);
    for (const [index, at] of checks.entries()) if (index > 0) expect(at - (checks[index - 1] as number)).toBeGreaterThanOrEqual(settings.reauthorizeMs - 1);
  });
});
