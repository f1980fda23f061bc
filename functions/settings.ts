import type { SettingName } from '../shared/platform/config.ts';

/**
 * The settings (variables of shared/platform/config.ts) each Lambda function reads, declared once: the stack gives
 * each function exactly these (the deployment file's values, its resources, the ARNs of its secrets; never a
 * `local` one), and the local runtime gives its execution environments these and no other setting.
 * test/infra/settings-drift.test.ts fails when the code bundled for a function reads a setting its entry lacks, or
 * its entry lists one its code never reads. The groups below follow the modules that read them.
 */

/** What shared/runtime.ts reads to build any handler's runtime: table, secrets cipher, model catalogue, JWT verifier, plans, rate limits. */
const runtime = [
  'TABLE_NAME',
  'AWS_REGION',
  'DYNAMODB_ENDPOINT',
  'IDEMPOTENCY_TTL_SECONDS',
  'SECRETS_KMS_KEY_ID',
  'KMS_ENDPOINT',
  'SECRETS_KEY_FILE',
  'BEDROCK_MODELS',
  'BEDROCK_EMBEDDING_MODELS',
  'BEDROCK_RERANK_MODELS',
  'BEDROCK_STS_MODELS',
  'OPENAI_COMPATIBLE_MODELS',
  'OPENAI_COMPATIBLE_EMBEDDING_MODELS',
  'OPENAI_COMPATIBLE_STT_MODELS',
  'OPENAI_COMPATIBLE_REALTIME_MODELS',
  'DEEPGRAM_STT_MODELS',
  'CARTESIA_TTS_MODELS',
  'RIME_TTS_MODELS',
  'ELEVENLABS_TTS_MODELS',
  'AMAZON_STT_MODELS',
  'AMAZON_TTS_MODELS',
  'IMAGE_INPUT_MODELS',
  'DEFAULT_LLM',
  'JWT_JWKS_URL',
  'JWT_ISSUER',
  'JWT_AUDIENCE',
  'JWT_ORG_CLAIM',
  'JWT_ALGORITHMS',
  'JWT_CLOCK_TOLERANCE_SECONDS',
  'JWT_MAX_LIFETIME_SECONDS',
  'PLANS',
  'QUOTA_CACHE_SECONDS',
  'RATE_LIMITING',
] as const satisfies readonly SettingName[];

/** The HTTP pipeline's body limit. */
const http = ['MAX_BODY_BYTES'] as const satisfies readonly SettingName[];
/** Sending to a queue (the local SQS emulator's endpoint). */
const queues = ['SQS_ENDPOINT'] as const satisfies readonly SettingName[];
/** The egress guard of tools, webhooks and organizations' own model providers (the base URL of their keys). */
const egress = ['LOOPBACK_EGRESS_PORTS', 'EGRESS_DENIED_PORTS'] as const satisfies readonly SettingName[];
/** Calling an OpenAI-compatible provider, with its key. */
const modelProviders = ['OPENAI_COMPATIBLE_BASE_URL', 'OPENAI_COMPATIBLE_API_KEY', 'SECRETS_MANAGER_ENDPOINT'] as const satisfies readonly SettingName[];
/** The knowledge runtime: vectors, BM25 snapshots, embedders, the ingestion queue. */
const knowledge = [
  ...modelProviders,
  ...queues,
  'KNOWLEDGE_INGESTION_QUEUE_URL',
  'KNOWLEDGE_SNAPSHOT_BUCKET',
  'KNOWLEDGE_VECTOR_DIR',
  'S3_ENDPOINT',
  'S3_VECTORS_BUCKET',
] as const satisfies readonly SettingName[];
/** Uploading and ingesting documents. */
const documents = ['DOCUMENT_PROCESSING_TIMEOUT_SECONDS', 'KNOWLEDGE_UPLOAD_BUCKET', 'S3_UPLOAD_ENDPOINT'] as const satisfies readonly SettingName[];
/** Telling Stripe of plan changes and reporting usage billed by use to its meters, with its secret key. */
const stripeBilling = ['BILLING_PROVIDER', 'STRIPE_SECRET_KEY', 'STRIPE_PRICES', 'STRIPE_API_URL', 'SECRETS_MANAGER_ENDPOINT'] as const satisfies readonly SettingName[];
/** Admitting a session (idle timeout, the past-due grace of its subscription). */
const sessions = ['SESSION_IDLE_TIMEOUT_SECONDS', 'PAST_DUE_GRACE_DAYS'] as const satisfies readonly SettingName[];
/** Running turns: models, tools, knowledge retrieval, the turn deadline. */
const turns = [...knowledge, ...egress, ...sessions, 'MAX_TOOL_ROUNDS', 'TOOL_TIMEOUT_MS', 'TOOL_MAX_RESPONSE_BYTES', 'TURN_TIMEOUT_SECONDS'] as const satisfies readonly SettingName[];
/** The voice runtime: Twilio, recordings, backstop schedules. */
const voice = ['TWILIO_API_BASE_URL', 'RECORDINGS_BUCKET', 'S3_ENDPOINT', 'CALL_BACKSTOP_QUEUE_ARN', 'SCHEDULER_ROLE_ARN', 'SCHEDULER_ENDPOINT'] as const satisfies readonly SettingName[];
/** Where the speech providers are: their own addresses on AWS, the simulators' under `npm start`. */
export const speechProviderAddresses = [
  'DEEPGRAM_API_URL',
  'CARTESIA_API_URL',
  'RIME_API_URL',
  'ELEVENLABS_API_URL',
  'POLLY_ENDPOINT',
  'TRANSCRIBE_STREAMING_ENDPOINT',
  'OPENAI_COMPATIBLE_REALTIME_URL',
  'NOVA_SONIC_ENDPOINT',
] as const satisfies readonly SettingName[];
/** The speech of calls through the media worker: the providers' addresses and the deployment's keys for them. */
const speech = [
  'SPEECH_ENGINES_DIR',
  ...speechProviderAddresses,
  'DEEPGRAM_API_KEY',
  'CARTESIA_API_KEY',
  'RIME_API_KEY',
  'ELEVENLABS_API_KEY',
  'OPENAI_COMPATIBLE_BASE_URL',
  'OPENAI_COMPATIBLE_API_KEY',
  'SECRETS_MANAGER_ENDPOINT',
] as const satisfies readonly SettingName[];
/** Placing and answering calls: the addresses Twilio calls back and connects to. */
const calls = [...voice, ...sessions, 'PUBLIC_BASE_URL', 'VOICE_RELAY_URL', 'MEDIA_WORKER_URL', 'CALL_BACKSTOP_GRACE_SECONDS'] as const satisfies readonly SettingName[];
/** The SSE event stream and the event log behind it. */
const eventStream = [
  'EVENT_LOG_RETENTION_HOURS',
  'EVENT_STREAM_POLL_MS',
  'EVENT_STREAM_REAUTHORIZE_MS',
  'EVENT_STREAM_OVERLAP_MS',
  'EVENT_STREAM_HEARTBEAT_MS',
  'EVENT_STREAM_MAX_SECONDS',
] as const satisfies readonly SettingName[];

/** Each function's settings, by the name of its route group or consumer (functions/route-groups.ts, functions/consumers.ts). */
export const functionSettings: Readonly<Record<string, readonly SettingName[]>> = {
  // Route groups.
  // The playground's page may connect to the media worker's voice sessions (its Content-Security-Policy names it).
  edge: [...runtime, ...http, 'MEDIA_WORKER_URL'],
  'api-keys': [...runtime, ...http],
  agents: [...runtime, ...http, ...egress, ...queues, 'REPLAY_QUEUE_URL', 'REPLAY_MAX_SESSIONS', 'REPLAY_MAX_TURNS', 'PAST_DUE_GRACE_DAYS'],
  tools: [...runtime, ...http, ...egress],
  models: [...runtime, ...http, ...egress],
  sessions: [...runtime, ...http, ...sessions],
  'chat-messages': [...runtime, ...http, ...turns, 'EVENT_STREAM_REAUTHORIZE_MS'],
  events: [...runtime, ...http, ...eventStream],
  webhooks: [...runtime, ...http, ...egress, ...queues, 'WEBHOOK_QUEUE_URL', 'WEBHOOK_RETRY_SCHEDULE_SECONDS'],
  usage: [...runtime, ...http, ...stripeBilling, 'STRIPE_WEBHOOK_SECRET'],
  analytics: [...runtime, ...http],
  'phone-numbers': [...runtime, ...http, ...calls, 'CALL_RING_TIMEOUT_SECONDS'],
  'carrier-callbacks': [...runtime, ...http, ...voice, 'PUBLIC_BASE_URL', 'VOICE_RELAY_URL', 'MEDIA_WORKER_URL', 'CALL_BACKSTOP_GRACE_SECONDS', 'SESSION_IDLE_TIMEOUT_SECONDS'],
  knowledge: [...runtime, ...http, ...knowledge, ...documents, 'PAST_DUE_GRACE_DAYS'],
  contacts: [...runtime, ...http],
  'whatsapp-numbers': [...runtime, ...http, ...queues, 'WHATSAPP_INBOUND_QUEUE_URL', 'PUBLIC_BASE_URL'],
  'whatsapp-webhook': [...runtime, ...http, ...queues, 'WHATSAPP_INBOUND_QUEUE_URL'],
  'whatsapp-conversations': [...runtime, ...http, ...sessions, 'WHATSAPP_GRAPH_API_URL', 'WHATSAPP_SEND_RETRY_MS', 'WHATSAPP_MEDIA_BUCKET', 'S3_ENDPOINT'],
  'call-campaigns': [...runtime, ...http, ...voice, ...queues, 'CAMPAIGN_QUEUE_URL', 'MEDIA_WORKER_URL'],
  'voice-relay': [...runtime, ...turns, ...voice, 'VOICE_RELAY_URL', 'VOICE_RELAY_MANAGEMENT_ENDPOINT'],
  // Table stream consumers.
  'session-expiry': [...runtime, 'SESSION_IDLE_TIMEOUT_SECONDS'],
  'event-relay': ['EVENT_BUS_NAME'],
  'event-log': [...runtime, ...eventStream],
  'usage-meter': [...runtime, ...queues, 'USAGE_ROLLUP_QUEUE_URL', 'USAGE_ROLLUP_SECONDS'],
  'analytics-aggregate': [...runtime],
  'analysis-dispatch': ['AWS_REGION', ...queues, 'ANALYSIS_QUEUE_URL', 'ANALYSIS_DEADLINE_SECONDS'],
  // Queue consumers.
  'webhook-delivery': [...runtime, ...egress, ...queues, 'WEBHOOK_QUEUE_URL', 'WEBHOOK_RETRY_SCHEDULE_SECONDS', 'WEBHOOK_TIMEOUT_MS', 'WEBHOOK_DELIVERY_RETENTION_DAYS'],
  analysis: [...runtime, ...modelProviders, 'ANALYSIS_MODEL_ID', 'ANALYSIS_DEADLINE_SECONDS'],
  replay: [...runtime, ...modelProviders, ...knowledge, ...egress, ...queues, 'REPLAY_QUEUE_URL', 'MAX_TOOL_ROUNDS', 'TOOL_TIMEOUT_MS', 'TOOL_MAX_RESPONSE_BYTES', 'TURN_TIMEOUT_SECONDS', 'ANALYSIS_MODEL_ID', 'ANALYSIS_DEADLINE_SECONDS'],
  'usage-rollup': [...runtime, ...queues, ...stripeBilling, 'USAGE_ROLLUP_QUEUE_URL', 'USAGE_ROLLUP_SECONDS'],
  'call-backstop': [...runtime, ...voice],
  'campaign-dispatcher': [...runtime, ...calls, ...queues, 'CALL_RING_TIMEOUT_SECONDS', 'CAMPAIGN_QUEUE_URL', 'CAMPAIGN_TICK_SECONDS', 'CAMPAIGN_CLAIM_GRACE_SECONDS'],
  'knowledge-ingestion': [...runtime, ...knowledge, ...documents, ...egress],
  'knowledge-upload-router': [...runtime, ...knowledge],
  'whatsapp-inbound': [...runtime, ...turns, 'WHATSAPP_GRAPH_API_URL', 'WHATSAPP_SEND_RETRY_MS', 'WHATSAPP_MEDIA_BUCKET'],
  // Scheduled functions.
  'knowledge-sweeper': [...runtime, ...knowledge, 'DOCUMENT_PROCESSING_TIMEOUT_SECONDS'],
};

/**
 * The settings of the long-lived services (services/): the media worker runs the turns of its calls as the voice relay
 * does, and checks Twilio's signature against its own address. The stack gives them to its container as to a function.
 */
export const serviceSettings: Readonly<Record<string, readonly SettingName[]>> = {
  'media-worker': [...runtime, ...turns, ...voice, ...speech, 'MEDIA_WORKER_URL'],
};

/** The settings of one function or service, each once; a name the tables do not know is a mistake of the declarations. */
export function settingsOf(name: string): readonly SettingName[] {
  const settings = functionSettings[name] ?? serviceSettings[name];
  if (!settings) throw new Error(`functions/settings.ts declares no settings for ${name}`);
  return [...new Set(settings)];
}
