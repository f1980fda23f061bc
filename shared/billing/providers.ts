import type { Config } from '../platform/config.ts';
import { CheckoutNotNeededError } from '../platform/errors.ts';
import type { PlanCatalog } from './plans.ts';
import type { BillingProvider, MeterEventSink } from './ports.ts';

/** The `manual` provider: nothing to tell anyone; the operator sets statuses with `keys subscription set`. */
export const manualBillingProvider: BillingProvider = {
  name: 'manual',
  apply: async () => undefined,
  startCheckout: async () => {
    throw new CheckoutNotNeededError('This deployment bills manually: change the plan with PATCH /v1/chat/subscription.');
  },
};

/** The configured provider; Stripe's client is loaded only when Stripe bills (it is most of the function's code). */
export async function billingProviderFrom(config: Config, plans: PlanCatalog): Promise<BillingProvider> {
  if (config.BILLING_PROVIDER === 'manual') return manualBillingProvider;
  if (!config.STRIPE_SECRET_KEY) throw new Error('Invalid configuration: BILLING_PROVIDER=stripe needs STRIPE_SECRET_KEY');
  const { StripeBillingProvider, parseStripePrices, stripeClient } = await import('./stripe.ts');
  return new StripeBillingProvider(stripeClient(config), parseStripePrices(config.STRIPE_PRICES, plans));
}

/**
 * Where usage billed by use goes: Stripe's meters when Stripe bills, nowhere otherwise. Stripe's library is loaded
 * on the first event, not with the function.
 */
export function meterEventSinkFrom(config: Config): MeterEventSink | undefined {
  if (config.BILLING_PROVIDER === 'manual') return undefined;
  let sink: Promise<MeterEventSink> | undefined;
  const load = async () => {
    if (!config.STRIPE_SECRET_KEY) throw new Error('Invalid configuration: BILLING_PROVIDER=stripe needs STRIPE_SECRET_KEY');
    const { StripeMeterEvents, stripeClient } = await import('./stripe.ts');
    return new StripeMeterEvents(stripeClient(config));
  };
  return { send: async (event) => (await (sink ??= load())).send(event) };
}
