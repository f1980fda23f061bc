import Stripe from 'stripe';
import { orgIdPattern } from '../auth/principal.ts';
import { InvalidSignatureError, InvalidSubscriptionTransitionError, NotFoundError } from '../errors.ts';
import { logger } from '../logger.ts';
import { changeSubscription, type SubscriptionChange, type SubscriptionDeps } from '../domain/subscriptions.ts';
import { stripeClient } from './stripe.ts';

export interface StripeWebhookDeps extends SubscriptionDeps {
  config: { STRIPE_WEBHOOK_SECRET?: string | undefined; STRIPE_SECRET_KEY?: string | undefined; STRIPE_API_URL?: string | undefined };
}

/** The Stripe events that move a subscription, and how. */
const changes: Record<string, SubscriptionChange> = {
  'invoice.payment_failed': { kind: 'paymentFailed' },
  'invoice.paid': { kind: 'paymentSucceeded' },
  'customer.subscription.paused': { kind: 'set', status: 'paused' },
  'customer.subscription.resumed': { kind: 'set', status: 'active' },
  'customer.subscription.deleted': { kind: 'set', status: 'canceled' },
};

let stripe: Stripe | undefined;

/**
 * `POST /v1/billing/stripe/webhook`: verifies `Stripe-Signature` over the raw body with the official library
 * (HMAC-SHA256, 5 minutes of tolerance), then applies the event to the subscription of the organization named in
 * the Stripe object's metadata (`orgId`, set when the subscription was linked; signed, so it cannot be forged).
 * Events that change nothing, or that the status does not allow, are acknowledged: Stripe retries only failures.
 */
export async function handleStripeWebhook(deps: StripeWebhookDeps, rawBody: string, signature: string | undefined): Promise<{ received: true; applied: boolean }> {
  const secret = deps.config.STRIPE_WEBHOOK_SECRET;
  if (!secret) throw new NotFoundError('This deployment takes no Stripe webhooks.');
  stripe ??= stripeClient(deps.config);
  let event: Stripe.Event;
  try {
    event = stripe.webhooks.constructEvent(rawBody, signature ?? '', secret);
  } catch (error) {
    throw new InvalidSignatureError(`The Stripe-Signature header does not verify: ${(error as Error).message.split('\n')[0]}`);
  }
  const change = changes[event.type];
  const orgId = orgOf(event.data.object as unknown as Record<string, unknown>);
  if (!change || !orgId) {
    logger.info('stripe event ignored', { eventId: event.id, type: event.type, orgId });
    return { received: true, applied: false };
  }
  try {
    await changeSubscription({ ...deps, billing: undefined }, orgId, change);
    return { received: true, applied: true };
  } catch (error) {
    if (!(error instanceof InvalidSubscriptionTransitionError)) throw error;
    logger.warn('stripe event does not apply to the subscription', { eventId: event.id, type: event.type, orgId, reason: error.message });
    return { received: true, applied: false };
  }
}

/** `metadata.orgId` of the object, or of the subscription an invoice belongs to. */
function orgOf(object: Record<string, unknown>): string | undefined {
  const metadataOf = (value: unknown) => (value as { metadata?: Record<string, string> } | undefined)?.metadata;
  const parent = object.parent as { subscription_details?: unknown } | undefined;
  const candidate = metadataOf(object)?.orgId ?? metadataOf(parent?.subscription_details)?.orgId ?? metadataOf(object.subscription_details)?.orgId;
  return candidate && orgIdPattern.test(candidate) ? candidate : undefined;
}
