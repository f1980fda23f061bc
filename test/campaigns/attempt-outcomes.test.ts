/**
 * How a campaign call's end counts for its attempt: every way a call ends has an outcome, and a call that was
 * answered (a transfer too: someone took it) is never retried as a failure.
 */
import { describe, expect, it } from 'vitest';
import { outcomeOf } from '../../shared/campaigns/campaign-attempts.ts';
import { endedReasons, type EndedReason } from '../../shared/conversations/session-schemas.ts';

/** Typed over every reason, so a new one fails to compile until its outcome is decided here. */
const expected: Record<EndedReason, ReturnType<typeof outcomeOf>> = {
  USER_CLOSED: 'FAILED',
  AGENT_ENDED: 'FAILED',
  EXPIRED: 'FAILED',
  HANGUP_CALLEE: 'ANSWERED',
  HANGUP_AGENT: 'ANSWERED',
  TTL: 'ANSWERED',
  NO_ANSWER: 'NO_ANSWER',
  BUSY: 'BUSY',
  FAILED: 'FAILED',
  CANCELED: 'FAILED',
  CONNECTION_LOST: 'ANSWERED',
  CARRIER_SILENT: 'FAILED',
  TRANSFERRED: 'ANSWERED',
};

describe('a campaign attempt\'s outcome', () => {
  it.each(endedReasons.map((reason) => [reason, expected[reason]] as const))('a call ended %s is %s', (reason, outcome) => {
    expect(outcomeOf(reason)).toBe(outcome);
  });
});
