import Stripe from 'stripe';
import type { Config } from '../platform/config.ts';
import type { BillingProvider, ProviderChange, StoredSubscription } from './ports.ts';

/** The Stripe client of this process: api.stripe.com, or the local simulator at STRIPE_API_URL. */
export function stripeClient(config: Pick<Config, 'STRIPE_SECRET_KEY' | 'STRIPE_API_URL'>): Stripe {
  const local = config.STRIPE_API_URL ? new URL(config.STRIPE_API_URL) : undefined;
  return new Stripe(config.STRIPE_SECRET_KEY ?? 'sk_unset', {
    maxNetworkRetries: 2,
    telemetry: false,
    ...(local ? { host: local.hostname, port: local.port, protocol: local.protocol === 'https:' ? ('https' as const) : ('http' as const) } : {}),
  });
}

/**
 * Stripe: a subscription the API changes is changed on Stripe first (plan → its price, pause → collection paused,
 * resume, cancel). Subscriptions not yet linked to Stripe (no provider id) have nothing to tell.
 */
export class StripeBillingProvider implements BillingProvider {
  readonly name = 'stripe' as const;
  private readonly stripe: Stripe;
  private readonly prices: Record<string, string>;

  constructor(stripe: Stripe, prices: Record<string, string>) {
    this.stripe = stripe;
    this.prices = prices;
  }

  async apply(subscription: StoredSubscription, change: ProviderChange): Promise<void> {
    const id = subscription.providerSubscriptionId;
    if (!id) return;
    if (change.kind === 'cancel') {
      await this.stripe.subscriptions.cancel(id);
      return;
    }
    if (change.kind === 'pause') {
      await this.stripe.subscriptions.update(id, { pause_collection: { behavior: 'void' } });
      return;
    }
    if (change.kind === 'resume') {
      await this.stripe.subscriptions.update(id, { pause_collection: '' });
      return;
    }
    const price = this.prices[change.plan];
    if (!price) throw new Error(`STRIPE_PRICES has no price for the plan ${change.plan}`);
    const current = await this.stripe.subscriptions.retrieve(id);
    await this.stripe.subscriptions.update(id, {
      items: [{ id: current.items.data[0]?.id, price }],
      metadata: { orgId: subscription.orgId, plan: change.plan },
    });
  }
}
