/** Time and identity sources, injected so tests can pin them. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

export const newId = (): string => crypto.randomUUID();

/**
 * The `updatedAt` of a change: now, but always later than the previous value, because stores use `updatedAt`
 * as the optimistic-lock version of a record.
 */
export function nextUpdatedAt(clock: Clock, previous: string): string {
  const now = clock.now().getTime();
  const floor = Date.parse(previous) + 1;
  return new Date(Math.max(now, floor)).toISOString();
}
