/**
 * Calling windows against an oracle that knows the zones' rules by heart rather than through Intl: US daylight
 * time (second Sunday of March to first Sunday of November, changing at 02:00 local), EU summer time (last Sunday
 * of March to last Sunday of October, at 01:00 UTC) and India's fixed +05:30. Instants are drawn around the
 * changes of 2026 and 2027, where a wrong offset would call someone an hour early or late.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isInsideWindow, minutesOf, nextWindowOpening, weekdays, type CallingWindow } from '../../shared/campaigns/campaign-windows.ts';

const hour = 60 * 60 * 1000;
const minute = 60 * 1000;

/** The day of month of the n-th (1-based; -1 = last) Sunday of a month. */
function sunday(year: number, month: number, n: number): number {
  if (n > 0) {
    const firstWeekday = new Date(Date.UTC(year, month - 1, 1)).getUTCDay();
    return 1 + ((7 - firstWeekday) % 7) + (n - 1) * 7;
  }
  const lastDay = new Date(Date.UTC(year, month, 0)).getUTCDate();
  return lastDay - new Date(Date.UTC(year, month - 1, lastDay)).getUTCDay();
}

const zones = {
  'America/New_York': (ms: number) => {
    const year = new Date(ms).getUTCFullYear();
    const starts = Date.UTC(year, 2, sunday(year, 3, 2), 7);
    const ends = Date.UTC(year, 10, sunday(year, 11, 1), 6);
    return ms >= starts && ms < ends ? -4 * hour : -5 * hour;
  },
  'Europe/Berlin': (ms: number) => {
    const year = new Date(ms).getUTCFullYear();
    const starts = Date.UTC(year, 2, sunday(year, 3, -1), 1);
    const ends = Date.UTC(year, 9, sunday(year, 10, -1), 1);
    return ms >= starts && ms < ends ? 2 * hour : hour;
  },
  'Asia/Kolkata': () => 5.5 * hour,
} as const;
type Zone = keyof typeof zones;

function oracleInside(ms: number, zone: Zone, windows: readonly CallingWindow[]): boolean {
  const local = new Date(ms + zones[zone](ms));
  const weekday = weekdays[(local.getUTCDay() + 6) % 7];
  const minuteOfDay = local.getUTCHours() * 60 + local.getUTCMinutes();
  return windows.some((window) => window.days.includes(weekday!) && minutesOf(window.start) <= minuteOfDay && minuteOfDay < minutesOf(window.end));
}

const hhmm = (minutes: number) => `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;

const windowArbitrary = fc
  .tuple(fc.subarray([...weekdays]), fc.integer({ min: 0, max: 47 }), fc.integer({ min: 1, max: 48 }))
  .map(([days, from, length]) => ({ days, start: hhmm(from * 30), end: hhmm(Math.min(48, from + length) * 30) }));

/** The changes of both years in both zones with daylight time: where the instants cluster. */
const changes = [2026, 2027].flatMap((year) => [
  Date.UTC(year, 2, sunday(year, 3, 2), 7),
  Date.UTC(year, 10, sunday(year, 11, 1), 6),
  Date.UTC(year, 2, sunday(year, 3, -1), 1),
  Date.UTC(year, 9, sunday(year, 10, -1), 1),
]);
const nearChange = (reachMinutes: number) =>
  fc.tuple(fc.constantFrom(...changes), fc.integer({ min: -reachMinutes, max: reachMinutes })).map(([change, offset]) => change + offset * minute);
const instantArbitrary = fc.oneof(
  nearChange(3 * 60),
  nearChange(3 * 24 * 60),
  fc.integer({ min: Date.UTC(2026, 0, 1) / minute, max: Date.UTC(2027, 11, 20) / minute }).map((minutes) => minutes * minute),
);
const zoneArbitrary = fc.constantFrom(...(Object.keys(zones) as Zone[]));

describe('calling windows', () => {
  it('say an instant is inside exactly when the wall clock of the zone shows a windowed day and time', () => {
    fc.assert(
      fc.property(instantArbitrary, zoneArbitrary, fc.array(windowArbitrary, { minLength: 1, maxLength: 3 }), (at, zone, windows) => {
        expect(isInsideWindow(at, zone, windows)).toBe(oracleInside(at, zone, windows));
      }),
      { numRuns: 2000 },
    );
  });

  it('open at the first minute inside a window, never earlier, across daylight-saving changes', () => {
    fc.assert(
      fc.property(instantArbitrary, zoneArbitrary, fc.array(windowArbitrary, { minLength: 1, maxLength: 3 }), (from, zone, windows) => {
        const opening = nextWindowOpening(from, zone, windows);
        const horizon = opening ?? from + 8 * 24 * hour;
        for (let at = from; at < horizon; at += minute) {
          if (oracleInside(at, zone, windows)) throw new Error(`inside at ${new Date(at).toISOString()}, but the opening said ${opening && new Date(opening).toISOString()}`);
        }
        if (opening !== undefined) expect(oracleInside(opening, zone, windows)).toBe(true);
      }),
      {
        numRuns: 300,
        // Found by this property: after the first 02:30 of a fall-back night has passed, the second one opens.
        examples: [
          [Date.UTC(2027, 9, 31, 1), 'Europe/Berlin', [{ days: ['SUN'], start: '02:30', end: '03:00' }]],
          // Also found by it: a window the clock falls back into (01:59 EDT → 01:00 EST) opens then, though its own
          // opening (00:00) is not shown again.
          [Date.UTC(2026, 10, 1, 5, 59), 'America/New_York', [{ days: ['SUN'], start: '00:00', end: '01:30' }]],
        ],
      },
    );
  });

  it('open a window that starts inside the spring-forward gap when the gap ends', () => {
    // 2026-03-08 in New York: 02:00 EST is followed by 03:00 EDT (07:00 UTC).
    const window = [{ days: ['SUN' as const], start: '02:30', end: '05:00' }];
    expect(new Date(nextWindowOpening(Date.UTC(2026, 2, 8, 5), 'America/New_York', window)!).toISOString()).toBe('2026-03-08T07:00:00.000Z');
    // 2026-11-01: 01:30 happens twice; the window opens at the first.
    const fallBack = [{ days: ['SUN' as const], start: '01:30', end: '03:00' }];
    expect(new Date(nextWindowOpening(Date.UTC(2026, 10, 1, 4), 'America/New_York', fallBack)!).toISOString()).toBe('2026-11-01T05:30:00.000Z');
  });
});
