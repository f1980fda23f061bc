import Stripe from 'stripe';
import { orgIdPattern } from '../platform/http/principal.ts';
import { InvalidSignatureError, InvalidSubscriptionTransitionError, NotFoundError, UnknownPlanError } from '../platform/errors.ts';
import { logger } from '../platform/logger.ts';
import type { Config } from '../platform/config.ts';
import { secretSetting } from '../platform/secrets/secret-settings.ts';
import { changeSubscription, linkedElsewhere, type SubscriptionChange, type SubscriptionDeps } from './subscriptions.ts';
import type { OrgStore } from '../identity/ports.ts';
import type { StoredSubscription } from './ports.ts';
import { stripeClient } from './stripe.ts';

export interface StripeWebhookDeps extends SubscriptionDeps {
  orgs: Pick<OrgStore, 'get'>;
  config: Pick<Config, 'AWS_REGION' | 'SECRETS_MANAGER_ENDPOINT' | 'STRIPE_WEBHOOK_SECRET' | 'STRIPE_WEBHOOK_SECRET_ARN' | 'STRIPE_SECRET_KEY' | 'STRIPE_API_URL'>;
}

/** The Stripe events that move a subscription, and how (a paid checkout links the subscription it made: `linkOf`). */
const changes: Record<string, SubscriptionChange> = {
  'invoice.payment_failed': { kind: 'paymentFailed' },
  'invoice.paid': { kind: 'paymentSucceeded' },
  'customer.subscription.paused': { kind: 'set', status: 'paused' },
  'customer.subscription.resumed': { kind: 'set', status: 'active' },
  'customer.subscription.deleted': { kind: 'set', status: 'canceled' },
};

let stripe: Stripe | undefined;

/** Stripe's libraries allow 5 minutes between the signed timestamp and now; we hold it both ways. */
const toleranceSeconds = 300;

/**
 * `POST /v1/billing/stripe/webhook`: verifies `Stripe-Signature` over the raw body with the official library
 * (HMAC-SHA256, signed at most 5 minutes before or after now), then applies the event to the subscription of the
 * organization named in the Stripe object's metadata (`orgId`, set on the checkout and the subscriptions the platform
 * makes; signed, so it cannot be forged). Events that change nothing, that the status does not allow, that are about
 * a subscription the organization no longer has, or that name an organization this deployment does not have, are
 * acknowledged with `applied: false`: Stripe retries only failures.
 */
export async function handleStripeWebhook(deps: StripeWebhookDeps, rawBody: string, signature: string | undefined): Promise<{ received: true; applied: boolean }> {
  // On AWS from its secret (cached 5 minutes): a rotated signing secret is used without a redeploy.
  const secret = await secretSetting(deps.config, 'STRIPE_WEBHOOK_SECRET');
  if (!secret) throw new NotFoundError('This deployment takes no Stripe webhooks.');
  stripe ??= stripeClient(deps.config);
  const now = deps.clock.now().getTime();
  let event: Stripe.Event;
  try {
    event = stripe.webhooks.constructEvent(rawBody, signature ?? '', secret, toleranceSeconds, undefined, now);
  } catch (error) {
    throw new InvalidSignatureError(`The Stripe-Signature header does not verify: ${(error as Error).message.split('\n')[0]}`);
  }
  // The library refuses only old timestamps; one from the future would stay replayable until that time passes.
  if (signedAtSeconds(signature ?? '') - Math.floor(now / 1000) > toleranceSeconds) {
    throw new InvalidSignatureError('The Stripe-Signature header does not verify: Timestamp outside the tolerance zone');
  }
  const object = event.data.object as unknown as Record<string, unknown>;
  const change =
    event.type === 'checkout.session.completed' ? linkOf(object) : event.type === 'customer.subscription.updated' ? collectionPauseChange(event) : changes[event.type];
  const orgId = orgOf(object);
  if (!change || !orgId) {
    logger.info('stripe event ignored', { eventId: event.id, type: event.type, orgId });
    return { received: true, applied: false };
  }
  // A linked subscription is stored, and API-key organizations have their item: with neither, the organization is not ours.
  const stored = await deps.subscriptions.get(orgId);
  if (!stored && !(await deps.orgs.get(orgId))) {
    logger.warn('stripe event names an unknown organization', { eventId: event.id, type: event.type, orgId });
    return { received: true, applied: false };
  }
  const named = change.kind === 'link' ? change.providerSubscriptionId : subscriptionOf(object);
  if (change.kind === 'link' && named === stored?.providerSubscriptionId) {
    logger.info('stripe checkout already linked', { eventId: event.id, orgId, subscription: named });
    return { received: true, applied: false };
  }
  const about = change.kind === 'link' ? undefined : named;
  if (about && linkedElsewhere(stored, about)) {
    logger.info('stripe event of a subscription that is not the linked one ignored', { eventId: event.id, type: event.type, orgId, subscription: named });
    return { received: true, applied: false };
  }
  // Stripe's report of a pause this platform made (or of one already seen) moves nothing.
  if ((change.kind === 'pause' && stored?.status === 'paused') || (change.kind === 'resume' && (stored?.status ?? 'active') === 'active')) {
    logger.info('stripe event matches the subscription already', { eventId: event.id, type: event.type, orgId });
    return { received: true, applied: false };
  }
  try {
    // Stripe made this change: it is not told of it again.
    await changeSubscription({ ...deps, billing: undefined }, orgId, change, { about });
  } catch (error) {
    if (!(error instanceof InvalidSubscriptionTransitionError) && !(error instanceof UnknownPlanError)) throw error;
    logger.warn('stripe event does not apply to the subscription', { eventId: event.id, type: event.type, orgId, reason: error.message });
    return { received: true, applied: false };
  }
  if (change.kind === 'link' && stored) await cancelReplaced(deps, stored, change.providerSubscriptionId);
  return { received: true, applied: true };
}

/**
 * Two checkouts paid one after the other (both opened before either was paid): the later subscription is the
 * organization's, and the one it replaced is canceled, so that the customer does not pay twice.
 */
async function cancelReplaced(deps: StripeWebhookDeps, previous: StoredSubscription, linked: string): Promise<void> {
  if (!deps.billing || !previous.providerSubscriptionId || previous.status === 'canceled' || previous.providerSubscriptionId === linked) return;
  try {
    await deps.billing.apply(previous, { kind: 'cancel' });
  } catch (error) {
    logger.error('a Stripe subscription replaced by a paid checkout could not be canceled; cancel it in Stripe', {
      orgId: previous.orgId,
      subscription: previous.providerSubscriptionId,
      reason: (error as Error).message,
    });
  }
}

/** A paid Checkout Session in subscription mode, made by `startCheckout`: its plan, customer and subscription. */
function linkOf(session: Record<string, unknown>): SubscriptionChange | undefined {
  const plan = (session.metadata as Record<string, string> | undefined)?.plan;
  const { customer, subscription } = session;
  if (session.mode !== 'subscription' || session.status !== 'complete' || !plan || typeof customer !== 'string' || typeof subscription !== 'string') return undefined;
  return { kind: 'link', plan, providerCustomerId: customer, providerSubscriptionId: subscription };
}

/** The Stripe subscription an event is about: the subscription itself, or the one an invoice bills. */
function subscriptionOf(object: Record<string, unknown>): string | undefined {
  if (object.object === 'subscription') return typeof object.id === 'string' ? object.id : undefined;
  const parent = object.parent as { subscription_details?: { subscription?: unknown } } | undefined;
  const named = parent?.subscription_details?.subscription ?? object.subscription;
  return typeof named === 'string' ? named : undefined;
}

/**
 * A pause of collection (`pause_collection`: how this platform pauses, and how Stripe's dashboard does) begun or
 * ended: Stripe reports it as `customer.subscription.updated` with the attribute in `previous_attributes`, never as
 * `.paused`/`.resumed` (those follow a status of `paused`). Any other update moves nothing here.
 */
function collectionPauseChange(event: Stripe.Event): SubscriptionChange | undefined {
  const previous = (event.data as { previous_attributes?: Record<string, unknown> }).previous_attributes;
  if (!previous || !('pause_collection' in previous)) return undefined;
  return (event.data.object as { pause_collection?: unknown }).pause_collection ? { kind: 'pause' } : { kind: 'resume' };
}

/** The `t=` of a verified `Stripe-Signature` header, read as Stripe's library reads it. */
function signedAtSeconds(header: string): number {
  const timestamp = header.split(',').filter((item) => item.split('=')[0] === 't').at(-1)?.split('=')[1];
  return Number.parseInt(timestamp ?? '', 10);
}

/** `metadata.orgId` of the object, or of the subscription an invoice belongs to. */
function orgOf(object: Record<string, unknown>): string | undefined {
  const metadataOf = (value: unknown) => (value as { metadata?: Record<string, string> } | undefined)?.metadata;
  const parent = object.parent as { subscription_details?: unknown } | undefined;
  const candidate = metadataOf(object)?.orgId ?? metadataOf(parent?.subscription_details)?.orgId ?? metadataOf(object.subscription_details)?.orgId;
  return candidate && orgIdPattern.test(candidate) ? candidate : undefined;
}
