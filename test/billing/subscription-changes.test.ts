/**
 * A change told to the billing provider, then lost to a concurrent write (shared/billing/subscriptions.ts): the
 * provider is told once per request, and what it made is recorded on the retry, unless the provider's side moved
 * meanwhile; a provider's event about a subscription that a concurrent write unlinked moves nothing. In memory: the
 * conditions are those of DynamoSubscriptionStore.
 */
import { describe, expect, it } from 'vitest';
import { createPlanCatalog } from '../../shared/billing/plans.ts';
import type { BillingProvider, ProviderChange, StoredSubscription, SubscriptionStore } from '../../shared/billing/ports.ts';
import { changeSubscription } from '../../shared/billing/subscriptions.ts';

const at = '2026-11-10T12:00:00.000Z';
const clock = { now: () => new Date(at) };
const plans = createPlanCatalog({});

/** A store whose first write loses to `concurrent`, written just before it. */
function racingStore(initial: StoredSubscription, concurrent: (stored: StoredSubscription) => StoredSubscription): SubscriptionStore & { stored: StoredSubscription } {
  let raced = false;
  const store = {
    stored: initial,
    get: async () => structuredClone(store.stored),
    replace: async (previous: StoredSubscription | undefined, next: StoredSubscription) => {
      if (!raced) {
        raced = true;
        store.stored = concurrent(store.stored);
      }
      if (previous?.updatedAt !== store.stored.updatedAt) return false;
      store.stored = next;
      return true;
    },
  };
  return store;
}

function countingProvider(): BillingProvider & { calls: ProviderChange[] } {
  const calls: ProviderChange[] = [];
  return {
    name: 'stripe',
    calls,
    apply: async (_subscription, change) => {
      calls.push(change);
      return { providerCustomerId: 'cus_1', providerSubscriptionId: `sub_stripe_${calls.length}` };
    },
    startCheckout: async () => {
      throw new Error('not used');
    },
  };
}

const free: StoredSubscription = { orgId: 'org-1', subscriptionId: 'sub_1', status: 'active', currentPlan: 'free', provider: 'manual', providerCustomerId: 'cus_1', createdAt: at, updatedAt: at };

describe('a provider change lost to a concurrent write', () => {
  it('is recorded on the retry when only the status moved meanwhile: one Stripe subscription, linked', async () => {
    // Prepare
    const subscriptions = racingStore(free, (stored) => ({ ...stored, status: 'past_due', pastDueSince: at, updatedAt: '2026-11-10T12:00:00.001Z' }));
    const billing = countingProvider();

    // Act
    const changed = await changeSubscription({ subscriptions, plans, clock, billing }, 'org-1', { kind: 'changePlan', plan: 'pro' });

    // Assess
    expect(billing.calls).toHaveLength(1);
    expect(changed).toMatchObject({ currentPlan: 'pro', provider: 'stripe', status: 'past_due' });
    expect(subscriptions.stored.providerSubscriptionId).toBe('sub_stripe_1');
  });

  it('is refused (409) when the plan moved meanwhile, rather than recorded over what the provider holds', async () => {
    // Prepare
    const subscriptions = racingStore(free, (stored) => ({ ...stored, currentPlan: 'enterprise', updatedAt: '2026-11-10T12:00:00.001Z' }));
    const billing = countingProvider();

    // Act
    const refused = await changeSubscription({ subscriptions, plans, clock, billing }, 'org-1', { kind: 'changePlan', plan: 'pro' }).catch((error: { code?: string }) => error.code);

    // Assess
    expect(refused).toBe('CONCURRENT_MODIFICATION');
    expect(billing.calls).toHaveLength(1);
    expect(subscriptions.stored.currentPlan).toBe('enterprise');
  });
});

describe("a provider's event about a subscription unlinked meanwhile", () => {
  it('moves nothing: the cancellation Stripe reports after a move to free does not cancel the organization', async () => {
    // Prepare: linked to Stripe's sub_stripe_1 on pro, then moved to free (unlinked) just before the event's write.
    const linked: StoredSubscription = { ...free, currentPlan: 'pro', provider: 'stripe', providerSubscriptionId: 'sub_stripe_1' };
    const subscriptions = racingStore(linked, (stored) => {
      const { providerSubscriptionId: _unlinked, ...rest } = stored;
      return { ...rest, currentPlan: 'free', provider: 'manual', updatedAt: '2026-11-10T12:00:00.001Z' };
    });

    // Act
    const after = await changeSubscription({ subscriptions, plans, clock }, 'org-1', { kind: 'set', status: 'canceled' }, { about: 'sub_stripe_1' });

    // Assess
    expect(after).toMatchObject({ currentPlan: 'free', provider: 'manual', status: 'active' });
    expect(subscriptions.stored).toMatchObject({ currentPlan: 'free', status: 'active' });
  });
});
