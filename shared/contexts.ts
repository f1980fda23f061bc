/**
 * The bounded contexts of shared/, their dependency order and their public surfaces (issue 22, docs/decisions.md).
 * Code only: nothing imports this at run time. test/layout/dependencies.test.ts holds the code to it:
 *  - every file of shared/ is in one of these folders (or is shared/runtime.ts, the root that wires every store);
 *  - a context imports only contexts of a lower `layer` (siblings of one layer do not import each other); where a
 *    lower context needs something of a higher one, it declares a port and a composition root wires the adapter;
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
    purpose: 'The kernel every context uses and that knows no context: HTTP pipeline, route declarations with their scopes and the principal they hand over, OpenAPI builder, table access and key helpers, idempotency, queues, secrets, egress guard, errors, configuration, logging, metrics, tracing, cost accounting, clock.',
    surface: ['clock.ts', 'config.ts', 'cost-accounting.ts', 'csv-records.ts', 'errors.ts', 'http/error-envelope.ts', 'http/handler.ts', 'http/openapi.ts', 'http/principal.ts', 'http/route.ts', 'http/scopes.ts', 'invocation.ts', 'logger.ts', 'metrics.ts', 'net/egress-guard.ts', 'net/standard-webhooks.ts', 'page-cursor.ts', 'ports.ts', 'queue/queue-definition.ts', 'queue/queue-message.ts', 'queue/sqs-scheduled-queue.ts', 'queue/sqs-sender.ts', 'schemas/common.ts', 'schemas/storable-json.ts', 'secrets/envelope-cipher.ts', 'secrets/secret-cipher.ts', 'secrets/secret-settings.ts', 'store/claimed-item.ts', 'store/dynamo.ts', 'store/idempotency-store.ts', 'store/items.ts', 'store/keys.ts', 'store/query-all.ts', 'store/replace-fields.ts', 'store/table.ts', 'tracing.ts'],
  },
  {
    name: 'identity',
    layer: 1,
    purpose: 'Who calls: JWT and API-key authentication, API keys and their secrets, organizations.',
    surface: ['api-key-schemas.ts', 'api-keys.ts', 'credential-watch.ts', 'ports.ts'],
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
    surface: ['admission.ts', 'analytics-report.ts', 'analytics-schemas.ts', 'analytics.ts', 'billing-metrics.ts', 'billing-schemas.ts', 'plans.ts', 'ports.ts', 'providers.ts', 'rate-limit-store.ts', 'rate-limit.ts', 'request-limits.ts', 'stripe-webhook.ts', 'subscriptions.ts', 'usage-report.ts', 'usage-rollup-runtime.ts', 'usage-rollup.ts', 'usage-schemas.ts', 'usage.ts'],
  },
  {
    name: 'models',
    layer: 4,
    purpose: "Models and their providers: the model catalog, its providers (LLMs, embeddings, rerank), organizations' own provider keys and models, the built-in offline LLM, embedders and reranker, the prompt conventions the built-in LLM reads, the voice catalogue.",
    surface: ['builtin-embedder.ts', 'model-catalog.ts', 'model-providers.ts', 'model-schemas.ts', 'models.ts', 'prompt-conventions.ts', 'provider-key-schemas.ts', 'provider-keys.ts', 'reranker.ts', 'voices.ts'],
  },
  {
    name: 'knowledge',
    layer: 5,
    purpose: 'Knowledge stores: documents, ingestion, chunking, embeddings, vector indexes, retrieval.',
    surface: ['chunker.ts', 'document-uploads.ts', 'hybrid-retrieval.ts', 'knowledge-ingestion.ts', 'knowledge-runtime.ts', 'knowledge-schemas.ts', 'knowledge-store.ts', 'knowledge-uploads-runtime.ts', 'knowledge.ts', 'local-flat-index.ts', 'pdf-text.ts', 'turn-context.ts', 'vector-store.ts'],
  },
  {
    name: 'speech',
    layer: 5,
    purpose: 'Speech for calls that pass through the media worker: the speech-to-text and text-to-speech ports, the built-in offline engines, the providers\' adapters, telephone audio and voice activity detection.',
    surface: ['builtin-stt.ts', 'builtin-tts.ts', 'engines.ts', 'event-queue.ts', 'ports.ts', 'speech-providers.ts', 'telephone-audio.ts', 'voice-activity.ts', 'word-error-rate.ts'],
  },
  {
    name: 'agents',
    layer: 6,
    purpose: 'Agents and their analysis configuration, tools (and their executors).',
    surface: ['agent-export-schemas.ts', 'agent-export.ts', 'agent-schemas.ts', 'agent-store.ts', 'agent-version-schemas.ts', 'agent-versions.ts', 'agents.ts', 'analysis-config-schemas.ts', 'api-tool-executor.ts', 'function-tool-executor.ts', 'placeholders.ts', 'ports.ts', 'tool-schemas.ts', 'tool-store.ts', 'tools.ts'],
  },
  {
    name: 'conversations',
    layer: 7,
    purpose: 'Sessions (with the analysis result they hold and the analysis job an ended one hands over), turns, transcripts, their events (session.*, message.added), the built-in routing tools (transfer, handoff), and the conversation composition root (models, tools, knowledge for a turn).',
    surface: ['analysis-result-schemas.ts', 'conversation-metrics.ts', 'conversation-runtime.ts', 'ports.ts', 'replay-runtime.ts', 'replay-schemas.ts', 'replay-store.ts', 'replays.ts', 'routing-tools.ts', 'session-events.ts', 'session-schemas.ts', 'session-store.ts', 'sessions.ts', 'transcript.ts', 'turn-state.ts', 'turn.ts'],
  },
  {
    name: 'analysis',
    layer: 8,
    purpose: 'Post-session analysis: what a model is asked for, the built-in and structured analyzers, the analysis queue.',
    surface: ['analysis-metrics.ts', 'analysis-runtime.ts', 'analysis.ts', 'builtin-analysis.ts', 'ports.ts', 'structured-analysis.ts'],
  },
  {
    name: 'voice',
    layer: 8,
    purpose: 'Phone numbers and calls: Twilio, ConversationRelay, the media worker and Twilio Media Streams, call slots, recordings, the backstop.',
    surface: ['call-slot-store.ts', 'call-slots.ts', 'media-worker.ts', 'ports.ts', 'relay-connections.ts', 'twilio-signature.ts', 'voice-runtime.ts', 'voice-schemas.ts', 'voice.ts'],
  },
  {
    name: 'whatsapp',
    layer: 8,
    purpose: "WhatsApp channels: Meta Graph client, signatures, inbound queue, replies, customers' media, template conversations.",
    surface: ['meta-signature.ts', 'whatsapp-conversations.ts', 'whatsapp-metrics.ts', 'whatsapp-runtime.ts', 'whatsapp-schemas.ts', 'whatsapp.ts'],
  },
  {
    name: 'campaigns',
    layer: 9,
    purpose: 'Contacts, do-not-call, contact import, call campaigns and their dispatcher.',
    surface: ['campaign-dispatcher.ts', 'campaign-runtime.ts', 'campaign-schemas.ts', 'campaigns.ts', 'contact-import.ts', 'contact-schemas.ts', 'contacts.ts'],
  },
  {
    name: 'webhooks',
    layer: 10,
    purpose: "What leaves the platform: the event catalogue, the events of the table's stream (for the bus and the event log), webhook endpoints and deliveries, the SSE event stream.",
    surface: ['event-stream-schemas.ts', 'event-stream.ts', 'table-stream-events.ts', 'webhook-delivery.ts', 'webhook-metrics.ts', 'webhook-runtime.ts', 'webhook-schemas.ts', 'webhooks.ts'],
  },
];
