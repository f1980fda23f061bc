/**
 * The bounded contexts of shared/, their dependency order and their public surfaces (issue 22, docs/decisions.md).
 * Code only: nothing imports this at run time. test/layout/dependencies.test.ts holds the code to it:
 *  - every file of shared/ is in one of these folders (or is shared/runtime.ts, the root that wires every store);
 *  - a context imports only contexts of a lower `layer` (siblings of one layer do not import each other), bar the
 *    few edges listed in `exceptions`, each with its reason, which may only shrink;
 *  - from outside a context (another context, functions/, infra/, bench/, clients/) only the files of its `surface`
 *    are imported; tests may import anything;
 *  - no import circle between files.
 * Adding a file another context imports means adding it to `surface` here, on purpose.
 */
export interface BoundedContext {
  /** The folder under shared/. */
  name: string;
  /** Lower layers are imported by higher ones, never the other way round. */
  layer: number;
  purpose: string;
  /** The files (relative to the folder) other contexts and functions/, infra/, bench/, clients/ may import. */
  surface: readonly string[];
}

export const contexts: readonly BoundedContext[] = [
  {
    name: 'platform',
    layer: 0,
    purpose: 'The kernel every context uses and that knows no context: HTTP pipeline, route declarations with their scopes and the principal they hand over, OpenAPI builder, table access and key helpers, idempotency, queues, secrets, egress guard, errors, configuration, logging, clock.',
    surface: ['clock.ts', 'config.ts', 'csv-records.ts', 'errors.ts', 'http/error-envelope.ts', 'http/handler.ts', 'http/openapi.ts', 'http/principal.ts', 'http/route.ts', 'http/scopes.ts', 'logger.ts', 'metrics.ts', 'net/egress-guard.ts', 'net/standard-webhooks.ts', 'page-cursor.ts', 'ports.ts', 'queue/queue-definition.ts', 'queue/queue-message.ts', 'queue/sqs-scheduled-queue.ts', 'queue/sqs-sender.ts', 'schemas/common.ts', 'schemas/storable-json.ts', 'secrets/envelope-cipher.ts', 'secrets/secret-cipher.ts', 'store/claimed-item.ts', 'store/dynamo.ts', 'store/idempotency-store.ts', 'store/items.ts', 'store/keys.ts', 'store/query-all.ts', 'store/replace-fields.ts', 'store/table.ts'],
  },
  {
    name: 'identity',
    layer: 1,
    purpose: 'Who calls: JWT and API-key authentication, API keys and their secrets, organizations.',
    surface: ['api-key-schemas.ts', 'api-keys.ts', 'authenticate.ts', 'credential-watch.ts', 'ports.ts'],
  },
  {
    name: 'events',
    layer: 2,
    purpose: 'Domain events: the event and its flat and envelope builders (each context declares its own events with them), the transactional outbox, the per-organization event log, the bus.',
    surface: ['bus.ts', 'events.ts', 'outbox.ts', 'per-organization.ts', 'ports.ts'],
  },
  {
    name: 'billing',
    layer: 3,
    purpose: 'Usage, plans, subscriptions and their provider (Stripe), quotas and admission, rate limits, analytics.',
    surface: ['admission.ts', 'analytics-report.ts', 'analytics-schemas.ts', 'analytics.ts', 'billing-schemas.ts', 'ports.ts', 'providers.ts', 'rate-limit-store.ts', 'rate-limit.ts', 'request-limits.ts', 'stripe-webhook.ts', 'subscriptions.ts', 'usage-report.ts', 'usage-rollup-runtime.ts', 'usage-rollup.ts', 'usage-schemas.ts', 'usage.ts'],
  },
  {
    name: 'knowledge',
    layer: 4,
    purpose: 'Knowledge stores: documents, ingestion, chunking, embeddings, vector indexes, retrieval.',
    surface: ['builtin-embedder.ts', 'chunker.ts', 'document-uploads.ts', 'hybrid-retrieval.ts', 'knowledge-ingestion.ts', 'knowledge-runtime.ts', 'knowledge-schemas.ts', 'knowledge-store.ts', 'knowledge-uploads-runtime.ts', 'knowledge.ts', 'local-flat-index.ts', 'pdf-text.ts', 'reranker.ts', 'turn-context.ts', 'vector-store.ts'],
  },
  {
    name: 'agents',
    layer: 5,
    purpose: 'Agents, tools (and their executors), models and their providers, the voice catalogue.',
    surface: ['agent-schemas.ts', 'agent-store.ts', 'agents.ts', 'api-tool-executor.ts', 'function-tool-executor.ts', 'model-catalog.ts', 'model-providers.ts', 'model-schemas.ts', 'models.ts', 'placeholders.ts', 'ports.ts', 'tool-schemas.ts', 'tool-store.ts', 'tools.ts', 'voices.ts'],
  },
  {
    name: 'conversations',
    layer: 6,
    purpose: 'Sessions, turns, transcripts, their events (session.*, message.added), and the conversation composition root (models, tools, knowledge for a turn).',
    surface: ['conversation-runtime.ts', 'ports.ts', 'session-events.ts', 'session-schemas.ts', 'session-store.ts', 'sessions.ts', 'transcript.ts', 'turn-state.ts', 'turn.ts'],
  },
  {
    name: 'analysis',
    layer: 7,
    purpose: 'Post-session analysis: the built-in and structured analyzers, the analysis queue.',
    surface: ['analysis-runtime.ts', 'analysis-schemas.ts', 'analysis.ts', 'builtin-analysis.ts', 'ports.ts', 'structured-analysis.ts'],
  },
  {
    name: 'voice',
    layer: 7,
    purpose: 'Phone numbers and calls: Twilio, ConversationRelay, call slots, recordings, the backstop.',
    surface: ['call-slot-store.ts', 'call-slots.ts', 'ports.ts', 'relay-connections.ts', 'twilio-signature.ts', 'voice-runtime.ts', 'voice-schemas.ts', 'voice.ts'],
  },
  {
    name: 'whatsapp',
    layer: 7,
    purpose: 'WhatsApp channels: Meta Graph client, signatures, inbound queue, replies.',
    surface: ['meta-signature.ts', 'whatsapp-runtime.ts', 'whatsapp-schemas.ts', 'whatsapp.ts'],
  },
  {
    name: 'campaigns',
    layer: 8,
    purpose: 'Contacts, do-not-call, contact import, call campaigns and their dispatcher.',
    surface: ['campaign-dispatcher.ts', 'campaign-runtime.ts', 'campaign-schemas.ts', 'campaigns.ts', 'contact-import.ts', 'contact-schemas.ts', 'contacts.ts'],
  },
  {
    name: 'webhooks',
    layer: 9,
    purpose: "What leaves the platform: the event catalogue, the events of the table's stream (for the bus and the event log), webhook endpoints and deliveries, the SSE event stream.",
    surface: ['event-stream-schemas.ts', 'event-stream.ts', 'table-stream-events.ts', 'webhook-delivery.ts', 'webhook-runtime.ts', 'webhook-schemas.ts', 'webhooks.ts'],
  },
];

/** An import that points up the layers today, kept on purpose for now; the dependency check fails on any other. */
export interface LayerException {
  from: string;
  to: string;
  why: string;
}

export const exceptions: readonly LayerException[] = [
  { from: 'shared/agents/agent-schemas.ts', to: 'shared/analysis/analysis-schemas.ts', why: "an agent carries its analysis configuration, whose shape analysis owns" },
  { from: 'shared/agents/agents.ts', to: 'shared/analysis/analysis-schemas.ts', why: "an agent's analysis configuration is checked by analysis's rules when the agent is saved" },
  { from: 'shared/conversations/ports.ts', to: 'shared/analysis/analysis-schemas.ts', why: "a stored session holds its analysis result and the configuration it was asked with" },
  { from: 'shared/conversations/ports.ts', to: 'shared/analysis/ports.ts', why: "the session store claims analysis jobs in the transaction that ends the session" },
  { from: 'shared/conversations/session-schemas.ts', to: 'shared/analysis/analysis-schemas.ts', why: "the API's session shows its analysis" },
  { from: 'shared/conversations/session-store.ts', to: 'shared/analysis/ports.ts', why: "the session store claims analysis jobs in the transaction that ends the session" },
  { from: 'shared/conversations/session-store.ts', to: 'shared/analysis/analysis-schemas.ts', why: "a stored session holds its analysis result" },
  { from: 'shared/knowledge/knowledge-runtime.ts', to: 'shared/agents/model-catalog.ts', why: "embedding and reranking models are in the one model catalogue" },
  { from: 'shared/knowledge/knowledge-runtime.ts', to: 'shared/agents/model-providers.ts', why: "embedders come from the model providers" },
  { from: 'shared/knowledge/knowledge.ts', to: 'shared/agents/model-catalog.ts', why: "a knowledge store names its embedding model from the one model catalogue" },
  { from: 'shared/knowledge/knowledge.ts', to: 'shared/agents/ports.ts', why: "type only: deleting a knowledge store detaches it from the agents that use it" },
  { from: 'shared/platform/http/handler.ts', to: 'shared/identity/authenticate.ts', why: "the HTTP pipeline authenticates every request (could become an injected dependency)" },
  { from: 'shared/platform/http/openapi.ts', to: 'shared/agents/agent-schemas.ts', why: "the OpenAPI builder names the shared components" },
  { from: 'shared/platform/http/openapi.ts', to: 'shared/analysis/analysis-schemas.ts', why: "the OpenAPI builder names the shared components" },
  { from: 'shared/platform/http/openapi.ts', to: 'shared/identity/api-key-schemas.ts', why: "the OpenAPI builder names the shared components" },
  { from: 'shared/platform/http/openapi.ts', to: 'shared/agents/model-schemas.ts', why: "the OpenAPI builder names the shared components" },
  { from: 'shared/platform/http/openapi.ts', to: 'shared/conversations/session-schemas.ts', why: "the OpenAPI builder names the shared components" },
  { from: 'shared/platform/http/openapi.ts', to: 'shared/agents/tool-schemas.ts', why: "the OpenAPI builder names the shared components" },
  { from: 'shared/platform/http/openapi.ts', to: 'shared/webhooks/webhook-schemas.ts', why: "the OpenAPI builder names the shared components" },
];
