import type { Config } from '../platform/config.ts';
import { NotFoundError, ValidationError, WebhookUrlNotAllowedError } from '../platform/errors.ts';
import { assertUrlAllowed, bareHostname, classifyAddress, describeLoopbackPorts, egressPolicyFromConfig, policyForPort, portOf, type Resolver } from '../platform/net/egress-guard.ts';
import { generateSigningSecret } from '../platform/net/standard-webhooks.ts';
import type { SealResponse } from '../platform/ports.ts';
import type { WebhookEndpoint, WebhookStore } from './ports.ts';
import { compareBy, paginate, type Page } from '../platform/schemas/common.ts';
import type {
  CreatedWebhookEndpoint,
  CreateWebhookInput,
  ListWebhooksQuery,
  RotatedWebhookSecret,
  UpdateWebhookInput,
} from './webhook-schemas.ts';
import { newId, nextUpdatedAt, type Clock } from '../platform/clock.ts';

export interface WebhookDeps {
  webhooks: WebhookStore;
  clock: Clock;
  config: Pick<Config, 'LOOPBACK_EGRESS_PORTS' | 'EGRESS_DENIED_PORTS'>;
  /** Name resolution for the registration check; the system resolver unless a test replaces it. */
  resolveHost?: Resolver | undefined;
}

/** After a rotation the previous secret keeps signing for this long, so receivers can switch without losing events. */
export const secretRotationOverlapMs = 24 * 60 * 60 * 1000;

/** A registration waits this long for the host to resolve; a name that does not answer by then is refused. */
export const hostResolutionTimeoutMs = 5_000;

const isLoopbackHost = (hostname: string): boolean => hostname === 'localhost' || classifyAddress(hostname) === 'loopback';

/**
 * A webhook URL must be https; plain http only for a loopback host (127.0.0.0/8, ::1, `localhost`) on a port the
 * deployment opens to loopback egress (`LOOPBACK_EGRESS_PORTS`). Its host must then pass the egress guard: not a
 * private, link-local, metadata or otherwise disallowed address, not a platform port, and resolvable. The guard runs
 * again on every delivery, where the socket connects; this check only refuses what could never be delivered.
 */
export async function assertDeliverableUrl(deps: Pick<WebhookDeps, 'config' | 'resolveHost'>, raw: string): Promise<void> {
  const url = new URL(raw);
  const hostname = bareHostname(url);
  const policy = egressPolicyFromConfig(deps.config);
  const portPolicy = policyForPort(policy, portOf(url));
  // A platform port is refused below as unreachable, whatever the scheme.
  if (url.protocol === 'http:' && portPolicy !== 'denied' && !(isLoopbackHost(hostname) && portPolicy.allowLoopback)) {
    const message = `must use https; http is allowed only for loopback hosts on the ports the deployment opens to loopback egress (${describeLoopbackPorts(deps.config.LOOPBACK_EGRESS_PORTS)})`;
    throw new ValidationError(`Invalid request body: url ${message}`, { details: [{ field: 'url', message }] });
  }
  try {
    await assertUrlAllowed(url, policy, deps.resolveHost, hostResolutionTimeoutMs);
  } catch (error) {
    // One answer for both causes, so that registering URLs cannot probe which names our resolver knows privately.
    const reason = `its host ${hostname} does not resolve, or is (or resolves to) an address webhooks may not reach: private, link-local, metadata, reserved, loopback on a port not opened to it (${describeLoopbackPorts(deps.config.LOOPBACK_EGRESS_PORTS)}), or a port of the platform's own services`;
    throw new WebhookUrlNotAllowedError(`The webhook URL is not allowed: ${reason}.`, {
      cause: error,
      details: [{ field: 'url', message: reason }],
    });
  }
}

/** The endpoint with its first signing secret, which this response (and its idempotent replays) alone shows. */
export async function createWebhook(
  deps: WebhookDeps,
  orgId: string,
  input: CreateWebhookInput,
  sealResponse?: SealResponse,
): Promise<CreatedWebhookEndpoint> {
  await assertDeliverableUrl(deps, input.url);
  const now = deps.clock.now().toISOString();
  const endpoint: WebhookEndpoint = {
    id: newId(),
    orgId,
    url: input.url,
    events: input.events,
    ...(input.description !== undefined ? { description: input.description } : {}),
    enabled: input.enabled,
    createdAt: now,
    updatedAt: now,
  };
  const secret = generateSigningSecret();
  const created = { ...endpoint, secret };
  await deps.webhooks.create(endpoint, secret, sealResponse?.(created));
  return created;
}

export async function getWebhook(deps: Pick<WebhookDeps, 'webhooks'>, orgId: string, endpointId: string): Promise<WebhookEndpoint> {
  const endpoint = await deps.webhooks.get(orgId, endpointId);
  if (!endpoint) throw new NotFoundError(`Webhook endpoint ${endpointId} not found.`);
  return endpoint;
}

export async function listWebhooks(deps: Pick<WebhookDeps, 'webhooks'>, orgId: string, query: ListWebhooksQuery): Promise<Page<WebhookEndpoint>> {
  const matching = (await deps.webhooks.list(orgId)).filter((endpoint) => query.enabled === undefined || endpoint.enabled === query.enabled);
  matching.sort(compareBy<WebhookEndpoint>(query.sort.field, query.sort.direction));
  return paginate(matching, query.page, query.limit);
}

/** Partial update; a changed URL is checked as on creation. The signing secrets are left alone. */
export async function updateWebhook(deps: WebhookDeps, orgId: string, endpointId: string, changes: UpdateWebhookInput): Promise<WebhookEndpoint> {
  const previous = await getWebhook(deps, orgId, endpointId);
  if (changes.url !== undefined && changes.url !== previous.url) await assertDeliverableUrl(deps, changes.url);
  const { description, ...rest } = changes;
  const next: WebhookEndpoint = { ...previous, ...rest, updatedAt: nextUpdatedAt(deps.clock, previous.updatedAt) };
  if (description === null) delete next.description;
  else if (description !== undefined) next.description = description;
  await deps.webhooks.replace(previous, next);
  return next;
}

export async function deleteWebhook(deps: Pick<WebhookDeps, 'webhooks'>, orgId: string, endpointId: string): Promise<void> {
  if (!(await deps.webhooks.delete(orgId, endpointId))) throw new NotFoundError(`Webhook endpoint ${endpointId} not found.`);
}

/**
 * A new signing secret, shown in this response only. The one it replaces keeps signing too (deliveries carry a
 * `v1,` signature for each) for {@link secretRotationOverlapMs}. Rotating again within that window drops the older
 * previous secret at once: at most two secrets sign at any time.
 */
export async function rotateWebhookSecret(
  deps: Pick<WebhookDeps, 'webhooks' | 'clock'>,
  orgId: string,
  endpointId: string,
): Promise<RotatedWebhookSecret> {
  const secret = generateSigningSecret();
  const previousValidUntil = deps.clock.now().getTime() + secretRotationOverlapMs;
  if (!(await deps.webhooks.rotateSecret(orgId, endpointId, secret, previousValidUntil))) {
    throw new NotFoundError(`Webhook endpoint ${endpointId} not found.`);
  }
  return { id: endpointId, secret, previousSecretValidUntil: new Date(previousValidUntil).toISOString() };
}
