import type { Config } from '../platform/config.ts';
import { secretSetting } from '../platform/secrets/secret-settings.ts';
import type { BillingProvider } from './ports.ts';

/** The `manual` provider: nothing to tell anyone; the operator sets statuses with `keys subscription set`. */
export const manualBillingProvider: BillingProvider = { name: 'manual', apply: async () => undefined };

/**
 * The configured provider; Stripe's client is loaded only when Stripe bills (it is most of the function's code).
 * Stripe's key is read on each change (on AWS from its secret, through a 5-minute cache), so a rotated key is used
 * without a redeploy; the client is made again only when the key changed.
 */
export async function billingProviderFrom(config: Config): Promise<BillingProvider> {
  if (config.BILLING_PROVIDER === 'manual') return manualBillingProvider;
  const { StripeBillingProvider, stripeClient } = await import('./stripe.ts');
  const prices = config.STRIPE_PRICES ? (JSON.parse(config.STRIPE_PRICES) as Record<string, string>) : {};
  let current: { key: string; provider: BillingProvider } | undefined;
  return {
    name: 'stripe',
    apply: async (subscription, change) => {
      const key = await secretSetting(config, 'STRIPE_SECRET_KEY');
      if (!key) throw new Error('Invalid configuration: BILLING_PROVIDER=stripe needs STRIPE_SECRET_KEY (on AWS, a value in the secret STRIPE_SECRET_KEY_ARN names)');
      if (current?.key !== key) current = { key, provider: new StripeBillingProvider(stripeClient({ ...config, STRIPE_SECRET_KEY: key }), prices) };
      return current.provider.apply(subscription, change);
    },
  };
}
