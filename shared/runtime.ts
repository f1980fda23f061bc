import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createJwtVerifier } from './identity/jwt.ts';
import { createAuthenticator } from './identity/authenticate.ts';
import type { Authenticator, Principal } from './platform/http/principal.ts';
import { parseConfig, type Config } from './platform/config.ts';
import { systemClock, type Clock } from './platform/clock.ts';
import { createModelCatalog, type ModelCatalog } from './models/model-catalog.ts';
import { createPlanCatalog, type PlanCatalog } from './billing/plans.ts';
import { RateLimiter } from './billing/rate-limit.ts';
import { checkRequestRate, type RequestRateCheck } from './billing/request-limits.ts';
import type { AgentStore, ToolStore } from './agents/ports.ts';
import type { AnalyticsStore, SubscriptionStore, UsageStore } from './billing/ports.ts';
import type { SessionStore } from './conversations/ports.ts';
import type { EventLogStore } from './events/ports.ts';
import type { ProviderKeyStore } from './models/ports.ts';
import type { ApiKeyStore, OrgStore } from './identity/ports.ts';
import type { IdempotencyStore, MetricsRecorder } from './platform/ports.ts';
import { emfMetrics } from './platform/metrics.ts';
import type { WebhookStore } from './webhooks/ports.ts';
import { secretCipherFromConfig } from './platform/secrets/secret-cipher.ts';
import { DynamoAgentStore } from './agents/agent-store.ts';
import { DynamoAnalyticsStore } from './billing/analytics-store.ts';
import { DynamoApiKeyStore } from './identity/api-key-store.ts';
import { createDocumentClient } from './platform/store/dynamo.ts';
import { DynamoEventLogStore } from './events/event-log-store.ts';
import { DynamoIdempotencyStore } from './platform/store/idempotency-store.ts';
import { DynamoKnowledgeStore } from './knowledge/knowledge-store.ts';
import { DynamoProviderKeyStore } from './models/provider-key-store.ts';
import { DynamoOrgStore } from './identity/org-store.ts';
import { DynamoSessionStore } from './conversations/session-store.ts';
import { DynamoSubscriptionStore } from './billing/subscription-store.ts';
import { DynamoRateLimitStore } from './billing/rate-limit-store.ts';
import { DynamoToolStore } from './agents/tool-store.ts';
import { DynamoUsageStore } from './billing/usage-store.ts';
import { DynamoWebhookStore } from './webhooks/webhook-store.ts';
import { DynamoCampaignStore } from './campaigns/campaign-store.ts';
import { settleCampaignAttempt } from './campaigns/campaign-attempts.ts';
import type { CampaignCallEnded } from './voice/ports.ts';

/** Everything a handler needs, built once per process from configuration. */
export interface Runtime {
  config: Config;
  /** The process's one DynamoDB client, for stores built beside these (one connection pool per process). */
  documentClient: DynamoDBDocumentClient;
  clock: Clock;
  /** Operational metrics, sent when each invocation ends (docs/deploy.md#dashboards-and-alarms). */
  metrics: MetricsRecorder;
  catalog: ModelCatalog;
  /** The organizations' own provider keys: their models join their catalog (docs/models.md#your-own-provider-keys). */
  providerKeys: ProviderKeyStore;
  orgs: OrgStore;
  apiKeys: ApiKeyStore;
  agents: AgentStore;
  tools: ToolStore;
  idempotency: IdempotencyStore;
  sessions: SessionStore;
  webhooks: WebhookStore;
  eventLog: EventLogStore;
  plans: PlanCatalog;
  subscriptions: SubscriptionStore;
  usage: UsageStore;
  rateLimiter: RateLimiter;
  analytics: AnalyticsStore;
  checkRequestRate?: (principal: Principal) => Promise<RequestRateCheck>;
  knowledge: DynamoKnowledgeStore;
  authenticator: Authenticator;
}

export function createRuntime(config: Config): Runtime {
  const built = runtimeOf(config);
  if (config.RATE_LIMITING === 'on') built.checkRequestRate = (principal) => checkRequestRate(built, principal);
  return built;
}

function runtimeOf(config: Config): Runtime {
  const client = createDocumentClient(config);
  const table = config.TABLE_NAME;
  // One cipher for every store, so they share its cache of data keys.
  const secrets = secretCipherFromConfig(config);
  const apiKeys = new DynamoApiKeyStore(client, table);
  return {
    config,
    documentClient: client,
    clock: systemClock,
    metrics: emfMetrics,
    catalog: createModelCatalog(config),
    providerKeys: new DynamoProviderKeyStore(client, table, secrets),
    orgs: new DynamoOrgStore(client, table),
    apiKeys,
    agents: new DynamoAgentStore(client, table),
    tools: new DynamoToolStore(client, table, secrets),
    idempotency: new DynamoIdempotencyStore(client, table, config.IDEMPOTENCY_TTL_SECONDS),
    sessions: new DynamoSessionStore(client, table, secrets),
    webhooks: new DynamoWebhookStore(client, table, secrets),
    eventLog: new DynamoEventLogStore(client, table),
    plans: createPlanCatalog(config),
    subscriptions: new DynamoSubscriptionStore(client, table),
    usage: new DynamoUsageStore(client, table),
    rateLimiter: new RateLimiter(new DynamoRateLimitStore(client, table)),
    analytics: new DynamoAnalyticsStore(client, table),
    knowledge: new DynamoKnowledgeStore(client, table),
    authenticator: createAuthenticator({ apiKeys, clock: systemClock, verifyJwt: createJwtVerifier(config) }),
  };
}

let processRuntime: Runtime | undefined;

/** The runtime of this process, from `process.env`; built on first use so that importing a handler is cheap. */
export function runtime(): Runtime {
  processRuntime ??= createRuntime(parseConfig());
  return processRuntime;
}

/**
 * What the voice runtime is told when a campaign's call ends: campaigns settles the attempt. Campaigns sits above
 * voice (it places its calls through voice), so the two meet here, where every context is known.
 */
export function campaignAttemptSettler(base: Pick<Runtime, 'documentClient' | 'config'>): CampaignCallEnded {
  const campaigns = new DynamoCampaignStore(base.documentClient, base.config.TABLE_NAME);
  return (end) => settleCampaignAttempt({ campaigns }, end);
}
