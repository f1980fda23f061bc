/**
 * Calling windows: weekly wall-clock intervals (`MON 09:00–17:00`) read in one IANA time zone. The wall time of an
 * instant comes from Intl (the runtime's tz database), so every daylight-saving change is honoured: a window
 * that starts inside a spring-forward gap opens when the gap ends, and a fall-back hour is inside a window as
 * often as the clock shows it.
 */
export const weekdays = ['MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT', 'SUN'] as const;
export type Weekday = (typeof weekdays)[number];

export interface CallingWindow {
  days: readonly Weekday[];
  /** `HH:MM`, local wall time, inclusive. */
  start: string;
  /** `HH:MM` (up to `24:00`), exclusive. */
  end: string;
}

interface WallTime {
  year: number;
  month: number;
  day: number;
  weekday: Weekday;
  /** Minutes since local midnight. */
  minute: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterOf(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      weekday: 'short',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
    });
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

/** Whether the runtime knows `timeZone` (an IANA name such as `Europe/Berlin`). */
export function isKnownTimeZone(timeZone: string): boolean {
  try {
    formatterOf(timeZone);
    return true;
  } catch {
    return false;
  }
}

function wallTimeAt(epochMs: number, timeZone: string): WallTime {
  const parts: Record<string, string> = {};
  for (const part of formatterOf(timeZone).formatToParts(epochMs)) parts[part.type] = part.value;
  return {
    year: Number(parts.year),
    month: Number(parts.month),
    day: Number(parts.day),
    weekday: (parts.weekday as string).toUpperCase() as Weekday,
    minute: Number(parts.hour) * 60 + Number(parts.minute),
  };
}

export const minutesOf = (hhmm: string): number => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

/** Whether the instant falls inside one of the windows, read in `timeZone`. */
export function isInsideWindow(epochMs: number, timeZone: string, windows: readonly CallingWindow[]): boolean {
  const wall = wallTimeAt(epochMs, timeZone);
  return windows.some((window) => window.days.includes(wall.weekday) && minutesOf(window.start) <= wall.minute && wall.minute < minutesOf(window.end));
}

/** The local wall time shown at an instant, as the UTC instant of the same digits (so times compare as numbers). */
function shownAt(epochMs: number, timeZone: string): number {
  const wall = wallTimeAt(epochMs, timeZone);
  return Date.UTC(wall.year, wall.month - 1, wall.day, 0, wall.minute);
}

const hourMs = 60 * 60 * 1000;

/**
 * The instants at which the wall clock of `timeZone` shows `minute` of that local date: two when the clock falls
 * back over it (earlier first), and when that time does not exist (spring forward) the end of the gap.
 */
function instantsOfWallTime(year: number, month: number, day: number, minute: number, timeZone: string): number[] {
  const target = Date.UTC(year, month - 1, day, 0, minute);
  // Correct a guess by the zone's offset; twice over, as the offset may differ on either side of a change.
  let guess = target;
  for (let pass = 0; pass < 3; pass += 1) guess += target - shownAt(guess, timeZone);
  if (shownAt(guess, timeZone) === target) {
    if (shownAt(guess - hourMs, timeZone) === target) return [guess - hourMs, guess];
    return shownAt(guess + hourMs, timeZone) === target ? [guess, guess + hourMs] : [guess];
  }
  // In a gap: the first minute whose wall time is past the target (no other change lies within hours of a gap).
  let before = guess - 3 * hourMs;
  let after = guess + 3 * hourMs;
  while (after - before > 60_000) {
    const middle = before + Math.floor((after - before) / 120_000) * 60_000;
    if (shownAt(middle, timeZone) >= target) after = middle;
    else before = middle;
  }
  return [after];
}

/**
 * The instant the clock of `timeZone` falls back on that local date, if it does: the wall time then shows an hour
 * again, and may re-enter a window without showing its opening.
 */
function fallBackOn(year: number, month: number, day: number, timeZone: string): number | undefined {
  const offsetAt = (epochMs: number) => shownAt(epochMs, timeZone) - epochMs;
  let before = instantsOfWallTime(year, month, day, 0, timeZone)[0] as number;
  let after = before + 24 * hourMs;
  const offsetBefore = offsetAt(before);
  if (offsetAt(after) >= offsetBefore) return undefined;
  while (after - before > 60_000) {
    const middle = before + Math.floor((after - before) / 120_000) * 60_000;
    if (offsetAt(middle) === offsetBefore) before = middle;
    else after = middle;
  }
  return after;
}

/** How far ahead an opening is looked for: a window on any weekday opens within 8 local days. */
const lookaheadDays = 8;

/**
 * The earliest instant at or after `fromMs` inside one of the windows, read in `timeZone`; undefined when the
 * windows never open (none has a day, or every one falls in a gap that does not exist).
 */
export function nextWindowOpening(fromMs: number, timeZone: string, windows: readonly CallingWindow[]): number | undefined {
  if (isInsideWindow(fromMs, timeZone, windows)) return fromMs;
  const today = wallTimeAt(fromMs, timeZone);
  let best: number | undefined;
  for (let offset = 0; offset <= lookaheadDays && best === undefined; offset += 1) {
    const date = new Date(Date.UTC(today.year, today.month - 1, today.day + offset));
    const weekday = weekdays[(date.getUTCDay() + 6) % 7] as Weekday;
    const fallBack = fallBackOn(date.getUTCFullYear(), date.getUTCMonth() + 1, date.getUTCDate(), timeZone);
    if (fallBack !== undefined && fallBack > fromMs && isInsideWindow(fallBack, timeZone, windows) && (best === undefined || fallBack < best)) best = fallBack;
    for (const window of windows) {
      if (!window.days.includes(weekday)) continue;
      // A fall-back hour shows the opening twice: the second may be the next one when the first has passed.
      for (const opens of instantsOfWallTime(date.getUTCFullYear(), date.getUTCMonth() + 1, date.getUTCDate(), minutesOf(window.start), timeZone)) {
        const candidate = Math.max(opens, fromMs);
        if (isInsideWindow(candidate, timeZone, windows) && (best === undefined || candidate < best)) best = candidate;
      }
    }
  }
  return best;
}
