import type { Config } from '../platform/config.ts';
import type { BillingProvider } from './ports.ts';

/** The `manual` provider: nothing to tell anyone; the operator sets statuses with `keys subscription set`. */
export const manualBillingProvider: BillingProvider = { name: 'manual', apply: async () => undefined };

/** The configured provider; Stripe's client is loaded only when Stripe bills (it is most of the function's code). */
export async function billingProviderFrom(config: Config): Promise<BillingProvider> {
  if (config.BILLING_PROVIDER === 'manual') return manualBillingProvider;
  if (!config.STRIPE_SECRET_KEY) throw new Error('Invalid configuration: BILLING_PROVIDER=stripe needs STRIPE_SECRET_KEY');
  const { StripeBillingProvider, stripeClient } = await import('./stripe.ts');
  return new StripeBillingProvider(stripeClient(config), config.STRIPE_PRICES ? (JSON.parse(config.STRIPE_PRICES) as Record<string, string>) : {});
}
