import type { Config } from '../platform/config.ts';
import type { CallSlotClaim, DynamoCallSlots } from './call-slot-store.ts';
import { currentPlan, type AdmissionDeps } from '../billing/admission.ts';

export interface CallSlotDeps extends AdmissionDeps {
  callSlots: DynamoCallSlots;
  config: AdmissionDeps['config'] & Pick<Config, 'CALL_RING_TIMEOUT_SECONDS' | 'CALL_BACKSTOP_GRACE_SECONDS'>;
}

/**
 * How long past its backstop a slot is kept when nobody frees it: the claim comes a moment before the dial, and
 * the backstop's own end of the call frees it normally.
 */
const slotMarginSeconds = 60;

/**
 * The slots the plan leaves free now, as many as it still admits (a plan lowered under calls in progress admits
 * none until enough end), in an order that spreads callers claiming at the same moment; undefined when the plan
 * does not cap calls.
 */
export async function freeCallSlots(deps: CallSlotDeps, orgId: string): Promise<number[] | undefined> {
  const now = nowSeconds(deps);
  const [plan, held] = await Promise.all([currentPlan(deps, orgId), deps.callSlots.held(orgId, now)]);
  if (plan.concurrentCalls === null) return undefined;
  const taken = new Set(held);
  const free = Array.from({ length: plan.concurrentCalls }, (_, slot) => slot).filter((slot) => !taken.has(slot));
  const start = Math.floor(Math.random() * free.length);
  return [...free.slice(start), ...free.slice(0, start)].slice(0, Math.max(0, plan.concurrentCalls - taken.size));
}

/**
 * The claim of `slot` for the call of session `holder`, whose longest possible life is `longestCallSeconds` (ring
 * and time limit): it lapses after the call's backstop, so that a slot whose release was lost is not lost forever.
 */
export function callSlotClaim(deps: CallSlotDeps, orgId: string, slot: number, holder: string, longestCallSeconds: number): CallSlotClaim {
  const now = nowSeconds(deps);
  return { orgId, slot, holder, now, expiresAt: now + longestCallSeconds + deps.config.CALL_BACKSTOP_GRACE_SECONDS + slotMarginSeconds };
}

/** Takes a free slot for `holder`: 'full' when the plan's concurrent calls are all held. */
export async function takeCallSlot(deps: CallSlotDeps, orgId: string, holder: string, longestCallSeconds: number): Promise<'taken' | 'uncapped' | 'full'> {
  const free = await freeCallSlots(deps, orgId);
  if (free === undefined) return 'uncapped';
  for (const slot of free) {
    if (await deps.callSlots.claim(callSlotClaim(deps, orgId, slot, holder, longestCallSeconds))) return 'taken';
  }
  return 'full';
}

/** The call of session `holder` is over: its slot is free (a second release changes nothing). */
export function releaseCallSlot(deps: Pick<CallSlotDeps, 'callSlots'>, orgId: string, holder: string): Promise<void> {
  return deps.callSlots.release(orgId, holder);
}

const nowSeconds = (deps: Pick<CallSlotDeps, 'clock'>): number => Math.floor(deps.clock.now().getTime() / 1000);
