import type { Config } from '../platform/config.ts';
import { CheckoutNotNeededError } from '../platform/errors.ts';
import { secretSetting } from '../platform/secrets/secret-settings.ts';
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

/** Stripe's secret key, read on each use (on AWS from its secret, through a 5-minute cache): a rotated key is used without a redeploy. */
async function stripeSecretKey(config: Config): Promise<string> {
  const key = await secretSetting(config, 'STRIPE_SECRET_KEY');
  if (!key) throw new Error('Invalid configuration: BILLING_PROVIDER=stripe needs STRIPE_SECRET_KEY (on AWS, a value in the secret STRIPE_SECRET_KEY_ARN names)');
  return key;
}

/**
 * The configured provider; Stripe's client is loaded only when Stripe bills (it is most of the function's code), and
 * made again only when the key changed.
 */
export async function billingProviderFrom(config: Config, plans: PlanCatalog): Promise<BillingProvider> {
  if (config.BILLING_PROVIDER === 'manual') return manualBillingProvider;
  const { StripeBillingProvider, parseStripePrices, stripeClient } = await import('./stripe.ts');
  const prices = parseStripePrices(config.STRIPE_PRICES, plans);
  let current: { key: string; provider: BillingProvider } | undefined;
  const provider = async () => {
    const key = await stripeSecretKey(config);
    if (current?.key !== key) current = { key, provider: new StripeBillingProvider(stripeClient({ ...config, STRIPE_SECRET_KEY: key }), prices) };
    return current.provider;
  };
  return {
    name: 'stripe',
    apply: async (subscription, change) => (await provider()).apply(subscription, change),
    startCheckout: async (subscription, request) => (await provider()).startCheckout(subscription, request),
  };
}

/**
 * Where usage billed by use goes: Stripe's meters when Stripe bills, nowhere otherwise. Stripe's library is loaded
 * on the first event, not with the function.
 */
export function meterEventSinkFrom(config: Config): MeterEventSink | undefined {
  if (config.BILLING_PROVIDER === 'manual') return undefined;
  let current: { key: string; sink: MeterEventSink } | undefined;
  return {
    send: async (event) => {
      const key = await stripeSecretKey(config);
      if (current?.key !== key) {
        const { StripeMeterEvents, stripeClient } = await import('./stripe.ts');
        current = { key, sink: new StripeMeterEvents(stripeClient({ ...config, STRIPE_SECRET_KEY: key })) };
      }
      return current.sink.send(event);
    },
  };
}
