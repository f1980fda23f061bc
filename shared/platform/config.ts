import * as z from 'zod';

const commaList = z
  .string()
  .optional()
  .transform((value) =>
    (value ?? '')
      .split(',')
      .map((item) => item.trim())
      .filter(Boolean),
  );

/** `8080,9000-9099`: ports and inclusive ranges of ports, each within 1–65535. */
const portRanges = commaList.transform((items, ctx) => {
  const ranges: [number, number][] = [];
  for (const item of items) {
    const match = /^(\d{1,5})(?:-(\d{1,5}))?$/.exec(item);
    const low = Number(match?.[1]);
    const high = Number(match?.[2] ?? match?.[1]);
    if (!match || low < 1 || high > 65_535 || low > high) {
      ctx.addIssue({ code: 'custom', message: `"${item}" is not a port or a range of ports (e.g. 8080 or 9000-9099)` });
      return z.NEVER;
    }
    ranges.push([low, high]);
  }
  return ranges;
});

/** A Secrets Manager secret's ARN (the stack sets it); its value is read at run time, never put in the environment. */
const secretArn = z.string().regex(/^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:.+$/, 'must be a Secrets Manager secret ARN').optional();

const configSchema = z.object({
  TABLE_NAME: z.string().min(1).default('agent-platform'),
  AWS_REGION: z.string().min(1).default('us-east-1'),
  /** Set only for DynamoDB Local; on AWS the SDK finds the regional endpoint. */
  DYNAMODB_ENDPOINT: z.url().optional(),
  MAX_BODY_BYTES: z.coerce.number().int().positive().default(256 * 1024),
  JWT_JWKS_URL: z.url().optional(),
  JWT_ISSUER: z.string().min(1).optional(),
  JWT_AUDIENCE: z.string().min(1).optional(),
  JWT_ORG_CLAIM: z.string().min(1).default('org_id'),
  JWT_ALGORITHMS: commaList.pipe(z.array(z.string()).transform((list) => (list.length ? list : ['RS256', 'ES256']))),
  JWT_CLOCK_TOLERANCE_SECONDS: z.coerce.number().int().min(0).max(300).default(5),
  /** The longest a bearer token may live: `exp` beyond it (from `iat`, or from now) is refused. */
  JWT_MAX_LIFETIME_SECONDS: z.coerce.number().int().min(60).max(30 * 24 * 3600).default(24 * 3600),
  /** Bedrock model ids offered in the catalog, e.g. `anthropic.claude-3-5-haiku-20241022-v1:0`. */
  BEDROCK_MODELS: commaList,
  /** Bedrock speech-to-speech models for calls through the media worker: Amazon Nova Sonic (docs/voice.md#amazon-nova-sonic). */
  BEDROCK_STS_MODELS: commaList.pipe(z.array(z.enum(['amazon.nova-sonic-v1:0']))),
  OPENAI_COMPATIBLE_BASE_URL: z.url().optional(),
  OPENAI_COMPATIBLE_API_KEY: z.string().optional(),
  OPENAI_COMPATIBLE_API_KEY_ARN: secretArn,
  OPENAI_COMPATIBLE_MODELS: commaList,
  /**
   * Embedding models offered to knowledge stores (docs/knowledge.md#embeddings), e.g. `amazon.titan-embed-text-v2:0`
   * on Bedrock, `text-embedding-3-small` at `OPENAI_COMPATIBLE_BASE_URL`. The built-in embedder is always offered.
   */
  BEDROCK_EMBEDDING_MODELS: commaList,
  OPENAI_COMPATIBLE_EMBEDDING_MODELS: commaList,
  /** Bedrock rerank models offered to knowledge stores: `cohere.rerank-v3-5:0`, `amazon.rerank-v1:0`. */
  BEDROCK_RERANK_MODELS: commaList,
  /**
   * Speech-to-text models at `OPENAI_COMPATIBLE_BASE_URL` (its `/audio/transcriptions`, e.g. `whisper-1`): they
   * transcribe WhatsApp voice notes (docs/whatsapp.md#media). The built-in STT model transcribes nothing.
   */
  OPENAI_COMPATIBLE_STT_MODELS: commaList,
  /**
   * Speech-to-speech models speaking the OpenAI Realtime protocol (`gpt-realtime`): they hear and answer the calls of
   * `sts` agents through the media worker (docs/voice.md#speech-to-speech), at `OPENAI_COMPATIBLE_REALTIME_URL`,
   * else at `OPENAI_COMPATIBLE_BASE_URL`, with `OPENAI_COMPATIBLE_API_KEY`.
   */
  OPENAI_COMPATIBLE_REALTIME_MODELS: commaList,
  /**
   * Speech models for calls through the media worker (docs/voice.md#speech-providers), each a model of the catalog:
   * Deepgram's streaming STT models (`nova-3`), Cartesia's, Rime's and ElevenLabs' TTS models (`sonic-2`,
   * `mistv2`, `eleven_flash_v2_5`). Each provider's key is its `<PROVIDER>_API_KEY` secret.
   */
  DEEPGRAM_STT_MODELS: commaList,
  CARTESIA_TTS_MODELS: commaList,
  RIME_TTS_MODELS: commaList,
  ELEVENLABS_TTS_MODELS: commaList,
  /**
   * Amazon's speech models, reached with the AWS role's credentials: Transcribe streaming (`transcribe-streaming`)
   * and Polly's engines (`polly-neural`, `polly-standard`, `polly-generative`, `polly-long-form`).
   */
  AMAZON_STT_MODELS: commaList.pipe(z.array(z.enum(['transcribe-streaming']))),
  AMAZON_TTS_MODELS: commaList.pipe(z.array(z.enum(['polly-standard', 'polly-neural', 'polly-generative', 'polly-long-form']))),
  /** `provider/name` of the catalog's LLMs that take images (a WhatsApp customer's photo); the built-in LLM always does. */
  IMAGE_INPUT_MODELS: commaList,
  /** `provider/name` of the LLM an agent gets when created without `modelId`; the built-in model otherwise. */
  DEFAULT_LLM: z.string().regex(/^[a-z-]+\/.+$/, 'must look like provider/name').optional(),
  /** The EventBridge bus domain events are published to; unset, they go to the in-process bus (local runtime). */
  EVENT_BUS_NAME: z.string().min(1).optional(),
  /** Set only for the local SQS emulator; on AWS the SDK finds the regional endpoint. */
  SQS_ENDPOINT: z.url().optional(),
  /** The webhook delivery queue, where the delivery function schedules its retries. */
  WEBHOOK_QUEUE_URL: z.string().min(1).optional(),
  /**
   * Seconds between delivery attempts (each one shortened by up to 20% of jitter); after the last one fails the
   * delivery is dead-lettered. The default spans 23.7 hours: 11 attempts.
   */
  WEBHOOK_RETRY_SCHEDULE_SECONDS: commaList.pipe(
    z
      .array(z.coerce.number<string>().positive().max(12 * 60 * 60))
      .transform((list) => (list.length ? list : [5, 30, 120, 600, 1800, 3600, 7200, 14400, 28800, 28800])),
  ),
  /** A receiver must answer 2xx within this long; anything slower is a failed attempt. */
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().positive().max(15_000).default(15_000),
  /** How long delivery records (and the payload kept for replays) are retained. */
  WEBHOOK_DELIVERY_RETENTION_DAYS: z.coerce.number().int().positive().max(365).default(30),
  /** How long the SSE event stream can resume from: events stay in the organization's event log this long. */
  EVENT_LOG_RETENTION_HOURS: z.coerce.number().int().positive().max(7 * 24).default(24),
  /** How often an open event stream reads the event log. */
  EVENT_STREAM_POLL_MS: z.coerce.number().int().min(10).max(60_000).default(1000),
  /**
   * How often an open event stream, and a chat reply while its turn runs, check their API key or token again (a
   * deleted key ends them within this, plus a poll or a model delta).
   */
  EVENT_STREAM_REAUTHORIZE_MS: z.coerce.number().int().min(100).max(60_000).default(5000),
  /**
   * How far back each read of the event log reaches before what was already read, because concurrent log writes
   * become visible out of order; a log write slower than a third of it is repeated (docs/event-stream.md).
   */
  EVENT_STREAM_OVERLAP_MS: z.coerce.number().int().min(100).max(30_000).default(3000),
  /** An idle event stream sends a comment this often; CloudFront drops an origin silent for 120 s. */
  EVENT_STREAM_HEARTBEAT_MS: z.coerce.number().int().min(100).max(60_000).default(15_000),
  /** An event stream ends itself after this long (the client resumes with Last-Event-ID), before Lambda's 15 minutes. */
  EVENT_STREAM_MAX_SECONDS: z.coerce.number().int().positive().max(890).default(840),
  /** Seconds an Idempotency-Key is remembered. */
  IDEMPOTENCY_TTL_SECONDS: z.coerce.number().int().positive().default(24 * 60 * 60),
  /** A session with no activity for this long is EXPIRED; enforced on every access. */
  SESSION_IDLE_TIMEOUT_SECONDS: z.coerce.number().int().positive().default(1800),
  /** Model calls per turn that may request tools before the turn must answer. */
  MAX_TOOL_ROUNDS: z.coerce.number().int().min(0).max(20).default(5),
  TOOL_TIMEOUT_MS: z.coerce.number().int().positive().max(60_000).default(10_000),
  TOOL_MAX_RESPONSE_BYTES: z.coerce.number().int().positive().default(64 * 1024),
  /** Upper bound of one turn; also how long the turn's lease holds the session. */
  TURN_TIMEOUT_SECONDS: z.coerce.number().int().positive().max(900).default(120),
  /**
   * `session.ended` leaves at most this long after a session ended: with the analysis, or with `analysis.status:
   * FAILED` when it could not be done in time (docs/analysis.md#deadline). SQS delays a message by at most 900 s.
   */
  ANALYSIS_DEADLINE_SECONDS: z.coerce.number().int().min(10).max(900).default(120),
  /** The catalog id of the model that analyses ended sessions; unset, each session's agent's own model. */
  ANALYSIS_MODEL_ID: z.uuid().optional(),
  /** The analysis queue, where ended sessions' analysis jobs (and their deadlines) are sent. */
  ANALYSIS_QUEUE_URL: z.string().min(1).optional(),
  /** The replay queue, where replays of past sessions through a changed agent wait for the replay function. */
  REPLAY_QUEUE_URL: z.string().min(1).optional(),
  /** The most sessions one replay takes (400 beyond it; docs/agent-versions.md#replay). */
  REPLAY_MAX_SESSIONS: z.coerce.number().int().min(1).max(100).default(20),
  /** The most user turns, over all its sessions, one replay takes (400 beyond it). */
  REPLAY_MAX_TURNS: z.coerce.number().int().min(1).max(1000).default(100),
  /**
   * The KMS key (id, ARN or alias) that seals the secrets the table keeps; the stack sets it to its key's ARN for
   * the functions that seal or open secrets (docs/security.md#secrets-at-rest).
   */
  SECRETS_KMS_KEY_ID: z.string().min(1).optional(),
  /** Set only for a KMS stand-in (tests); on AWS the SDK finds the regional endpoint. */
  KMS_ENDPOINT: z.url().optional(),
  /** Set only for a Secrets Manager stand-in (tests); on AWS the SDK finds the regional endpoint. */
  SECRETS_MANAGER_ENDPOINT: z.url().optional(),
  /** Instead of KMS, a local key file (base64 of 32 bytes) seals the secrets: `npm start` sets it to `DATA_DIR/secrets.key`. */
  SECRETS_KEY_FILE: z.string().min(1).optional(),
  /**
   * The plan catalog as JSON, `{"<planId>": {name, quotas: {chat_messages, voice_seconds, knowledge_chunks},
   * concurrentCalls, requestsPerSecond, burst}}`; each entry replaces or adds a plan of the defaults (free, pro,
   * enterprise; docs/usage-and-billing.md). A quota of null is unlimited.
   */
  PLANS: z.string().optional(),
  /**
   * How long a process trusts what it read of an organization's subscription and period usage before reading it
   * again: the bound of how far over its quota an organization can go (docs/usage-and-billing.md#enforcement).
   */
  QUOTA_CACHE_SECONDS: z.coerce.number().int().min(0).max(300).default(5),
  /**
   * `off` admits every request whatever the plan's rate: for test suites whose bursts are not what they test
   * (test/support/api.ts); deployments and `npm start` keep it `on`.
   */
  RATE_LIMITING: z.enum(['on', 'off']).default('on'),
  /**
   * Who bills: `manual` (the default; the operator sets statuses with the keys CLI) or `stripe` (plan changes,
   * pauses and cancels are sent to Stripe, and Stripe's webhooks drive past_due/active).
   */
  BILLING_PROVIDER: z.enum(['manual', 'stripe']).default('manual'),
  STRIPE_SECRET_KEY: z.string().min(1).optional(),
  STRIPE_SECRET_KEY_ARN: secretArn,
  /** The `whsec_…` secret Stripe signs webhook events with; without it the Stripe webhook route answers 404. */
  STRIPE_WEBHOOK_SECRET: z.string().min(1).optional(),
  STRIPE_WEBHOOK_SECRET_ARN: secretArn,
  /** Set only for the local Stripe simulator (`npm start`); on AWS the SDK talks to api.stripe.com. */
  STRIPE_API_URL: z.url().optional(),
  /** The Stripe price of each plan, as JSON: `{"pro": "price_…"}`. */
  STRIPE_PRICES: z.string().optional(),
  /** A `past_due` subscription keeps working this long after the failed payment; then it is refused as inactive. */
  PAST_DUE_GRACE_DAYS: z.coerce.number().int().min(0).max(90).default(7),
  /** The queue of usage roll-ups: `usage.updated` at most once per organization per USAGE_ROLLUP_SECONDS. */
  USAGE_ROLLUP_QUEUE_URL: z.string().min(1).optional(),
  USAGE_ROLLUP_SECONDS: z.coerce.number().int().min(1).max(900).default(60),
  /**
   * The loopback ports (127.0.0.0/8, ::1) tools and webhooks may reach, e.g. `8080,9000-9099`; none unless listed.
   * Private ranges are never reachable.
   */
  LOOPBACK_EGRESS_PORTS: portRanges,
  /**
   * The address the carrier reaches this API at (status callbacks and inbound voice webhooks; their signatures are
   * computed over it): the stack's public base, `http://127.0.0.1:<port>` locally.
   */
  PUBLIC_BASE_URL: z.url().optional(),
  /** The WebSocket API's `wss://` address that ConversationRelay connects to (the local runtime's `ws://` one locally). */
  VOICE_RELAY_URL: z.url().optional(),
  /**
   * The media worker's `wss://…/media-stream`, where Twilio Media Streams connect the calls that do not go through
   * ConversationRelay (docs/voice.md#which-path-a-call-takes): the stack's load balancer; the local worker's locally.
   */
  MEDIA_WORKER_URL: z.url().optional(),
  /** The WebSocket API's connection-management endpoint (`https://<api>.execute-api.<region>.amazonaws.com/<stage>`). */
  VOICE_RELAY_MANAGEMENT_ENDPOINT: z.url().optional(),
  /** Twilio's REST API; the local Twilio simulator's address locally. */
  TWILIO_API_BASE_URL: z.url().default('https://api.twilio.com'),
  /** The bucket call recordings are copied into (the stack's; fauxqs's locally). */
  RECORDINGS_BUCKET: z.string().min(1).optional(),
  /** Set only for a local S3 (fauxqs); on AWS the SDK finds the regional endpoint. */
  S3_ENDPOINT: z.url().optional(),
  /** The queue a call's backstop schedule sends to (its ARN: the schedule's target). */
  CALL_BACKSTOP_QUEUE_ARN: z.string().min(1).optional(),
  /** The role EventBridge Scheduler assumes to send to that queue. */
  SCHEDULER_ROLE_ARN: z.string().min(1).optional(),
  /** Set only for the local Scheduler stand-in; on AWS the SDK finds the regional endpoint. */
  SCHEDULER_ENDPOINT: z.url().optional(),
  /** How long after a call's ttl (plus ringing) its backstop ends it if the carrier has not reported the end. */
  CALL_BACKSTOP_GRACE_SECONDS: z.coerce.number().int().min(0).max(3600).default(120),
  /** How long an outbound call rings before it counts as not answered (Twilio's `Timeout`, 5–600). */
  CALL_RING_TIMEOUT_SECONDS: z.coerce.number().int().min(5).max(600).default(30),
  /** The knowledge ingestion queue (documents to build, stores to clean up; docs/knowledge.md). */
  KNOWLEDGE_INGESTION_QUEUE_URL: z.string().min(1).optional(),
  /** The bucket documents are uploaded to with presigned POSTs (the stack's; fauxqs's locally). */
  KNOWLEDGE_UPLOAD_BUCKET: z.string().min(3).max(63).optional(),
  /** Set only locally: the upload gateway presigned POSTs go to, which checks their policy as S3 does (docs/knowledge.md#uploads). */
  S3_UPLOAD_ENDPOINT: z.url().optional(),
  /** The S3 Vectors bucket holding one index per knowledge store; the stack sets it. */
  S3_VECTORS_BUCKET: z.string().min(3).max(63).optional(),
  /** Instead of S3 Vectors, the local flat vector index keeps its files here: `npm start` sets it to `DATA_DIR/vectors`. */
  KNOWLEDGE_VECTOR_DIR: z.string().min(1).optional(),
  /** The bucket of BM25 index snapshots (the stack's); locally they are files under `KNOWLEDGE_VECTOR_DIR/bm25`. */
  KNOWLEDGE_SNAPSHOT_BUCKET: z.string().min(3).max(63).optional(),
  /**
   * The root the built-in speech engines (eSpeak NG, PocketSphinx) are unpacked under, as Debian lays them out
   * (docs/voice.md#built-in-speech). Unset: the system's (`/`, the container's) when it has them, else the one
   * `npm install` made under .cache/speech/root.
   */
  SPEECH_ENGINES_DIR: z.string().min(1).optional(),
  /**
   * A document still PROCESSING this long after it was submitted (after its upload window closed, for an upload)
   * is FAILED with TIMEOUT (docs/knowledge.md#limits).
   */
  DOCUMENT_PROCESSING_TIMEOUT_SECONDS: z.coerce.number().int().min(60).max(24 * 60 * 60).default(900),
  /** The campaign dispatch queue: the tick's fan-out, one message per active campaign (docs/campaigns.md#dispatcher). */
  CAMPAIGN_QUEUE_URL: z.string().min(1).optional(),
  /**
   * How often the dispatcher's tick runs: every minute on AWS (EventBridge Scheduler's finest rate); locally the
   * tick of `npm start`. Each dispatch cycle lasts at most 80% of it (50 s at most), so cycles rarely overlap.
   */
  CAMPAIGN_TICK_SECONDS: z.coerce.number().min(0.1).max(60).default(60),
  /**
   * A claimed attempt with no session after this long was never dialled (its dispatcher died between claim and
   * dial; the session is written before the carrier is asked): it settles FAILED. Longer than the dispatcher's timeout.
   */
  CAMPAIGN_CLAIM_GRACE_SECONDS: z.coerce.number().min(0).max(3600).default(90),
  /** The speech providers' APIs; the local simulators' addresses locally (docs/voice.md#speech-providers). */
  DEEPGRAM_API_URL: z.url().default('wss://api.deepgram.com'),
  CARTESIA_API_URL: z.url().default('https://api.cartesia.ai'),
  RIME_API_URL: z.url().default('https://users.rime.ai'),
  ELEVENLABS_API_URL: z.url().default('https://api.elevenlabs.io'),
  /** Set only for the local Polly, Transcribe and Nova Sonic simulators; on AWS the SDKs find the regional endpoints. */
  POLLY_ENDPOINT: z.url().optional(),
  TRANSCRIBE_STREAMING_ENDPOINT: z.url().optional(),
  /** Where the OpenAI Realtime models are when not at `OPENAI_COMPATIBLE_BASE_URL`: the local simulator's address. */
  OPENAI_COMPATIBLE_REALTIME_URL: z.url().optional(),
  NOVA_SONIC_ENDPOINT: z.url().optional(),
  DEEPGRAM_API_KEY: z.string().min(1).optional(),
  DEEPGRAM_API_KEY_ARN: secretArn,
  CARTESIA_API_KEY: z.string().min(1).optional(),
  CARTESIA_API_KEY_ARN: secretArn,
  RIME_API_KEY: z.string().min(1).optional(),
  RIME_API_KEY_ARN: secretArn,
  ELEVENLABS_API_KEY: z.string().min(1).optional(),
  ELEVENLABS_API_KEY_ARN: secretArn,
  /** The Graph API with its version (`https://graph.facebook.com/v23.0`); the local WhatsApp simulator's address locally. */
  WHATSAPP_GRAPH_API_URL: z.url().default('https://graph.facebook.com/v23.0'),
  /** The FIFO queue WhatsApp notifications wait in between the webhook's fast 200 and their handling (docs/whatsapp.md). */
  WHATSAPP_INBOUND_QUEUE_URL: z.string().min(1).optional(),
  /** The bucket WhatsApp customers' media are copied to (`<org>/<session>/<media id>`); the stack sets it, `npm start` uses fauxqs's S3. */
  WHATSAPP_MEDIA_BUCKET: z.string().min(3).max(63).optional(),
  /** Milliseconds before each retry of a failed WhatsApp send or media download (each with up to 20% jitter); after the last, the failure is recorded. */
  WHATSAPP_SEND_RETRY_MS: commaList.pipe(
    z.array(z.coerce.number<string>().int().min(0).max(10_000)).transform((list) => (list.length ? list : [250, 1000, 4000])),
  ),
  /** Ports tools and webhooks never reach, on any address: the local runtime lists its own services' ports here. */
  EGRESS_DENIED_PORTS: portRanges,
});

export type Config = z.output<typeof configSchema>;

/**
 * The settings whose values are secrets. Locally (and in tests) each is its own variable; on AWS the stack sets
 * `<NAME>_ARN` instead, the Secrets Manager secret that holds it, and `secretSetting` (secrets/secret-settings.ts)
 * reads it at run time.
 */
export const secretSettings = [
  'OPENAI_COMPATIBLE_API_KEY',
  'STRIPE_SECRET_KEY',
  'STRIPE_WEBHOOK_SECRET',
  'DEEPGRAM_API_KEY',
  'CARTESIA_API_KEY',
  'RIME_API_KEY',
  'ELEVENLABS_API_KEY',
] as const;
export type SecretSettingName = (typeof secretSettings)[number];
/** The variable that names a secret setting's Secrets Manager secret. */
export const secretArnVariable = <Name extends SecretSettingName>(name: Name): `${Name}_ARN` => `${name}_ARN`;

/** Every setting a function may read, but the secrets' `_ARN` forms (the stack's way of giving a secret setting). */
export type SettingName = Exclude<keyof Config, `${SecretSettingName}_ARN`>;

/**
 * Where each setting's value comes from on AWS, declared once for the stack, the local runtime and the drift test
 * (test/infra/settings-drift.test.ts):
 * - `deployment`: the deployment configuration file (`cdk deploy -c config=deploy/<file>.json`, infra/deployment-config.ts);
 *   left out of the file, the function gets no variable and the default here applies;
 * - `secret`: a secret the stack creates empty or the file names by ARN; the function gets `<NAME>_ARN` and the right to read it;
 * - `stack`: a resource of the stack (table, queues, buckets, addresses) or a value the stack derives from its own limits;
 * - `local`: set only by the local runtime and tests (emulator endpoints, local files, test shortcuts); on AWS the
 *   default applies, which the stack's resources are sized for;
 * - `lambda`: set by Lambda itself.
 */
export type SettingSource = 'deployment' | 'secret' | 'stack' | 'local' | 'lambda';
export const settingSources = {
  TABLE_NAME: 'stack',
  AWS_REGION: 'lambda',
  DYNAMODB_ENDPOINT: 'local',
  MAX_BODY_BYTES: 'deployment',
  JWT_JWKS_URL: 'deployment',
  JWT_ISSUER: 'deployment',
  JWT_AUDIENCE: 'deployment',
  JWT_ORG_CLAIM: 'deployment',
  JWT_ALGORITHMS: 'deployment',
  JWT_CLOCK_TOLERANCE_SECONDS: 'deployment',
  JWT_MAX_LIFETIME_SECONDS: 'deployment',
  BEDROCK_MODELS: 'deployment',
  OPENAI_COMPATIBLE_BASE_URL: 'deployment',
  OPENAI_COMPATIBLE_API_KEY: 'secret',
  OPENAI_COMPATIBLE_MODELS: 'deployment',
  BEDROCK_EMBEDDING_MODELS: 'deployment',
  OPENAI_COMPATIBLE_EMBEDDING_MODELS: 'deployment',
  OPENAI_COMPATIBLE_STT_MODELS: 'deployment',
  OPENAI_COMPATIBLE_REALTIME_MODELS: 'deployment',
  IMAGE_INPUT_MODELS: 'deployment',
  DEEPGRAM_STT_MODELS: 'deployment',
  CARTESIA_TTS_MODELS: 'deployment',
  RIME_TTS_MODELS: 'deployment',
  ELEVENLABS_TTS_MODELS: 'deployment',
  AMAZON_STT_MODELS: 'deployment',
  AMAZON_TTS_MODELS: 'deployment',
  BEDROCK_RERANK_MODELS: 'deployment',
  BEDROCK_STS_MODELS: 'deployment',
  DEFAULT_LLM: 'deployment',
  EVENT_BUS_NAME: 'stack',
  SQS_ENDPOINT: 'local',
  WEBHOOK_QUEUE_URL: 'stack',
  WEBHOOK_RETRY_SCHEDULE_SECONDS: 'deployment',
  // At most the delivery function's 15 s budget of a 20 s timeout (functions/consumers.ts); only lowered.
  WEBHOOK_TIMEOUT_MS: 'deployment',
  WEBHOOK_DELIVERY_RETENTION_DAYS: 'deployment',
  EVENT_LOG_RETENTION_HOURS: 'deployment',
  EVENT_STREAM_POLL_MS: 'deployment',
  EVENT_STREAM_REAUTHORIZE_MS: 'deployment',
  EVENT_STREAM_OVERLAP_MS: 'deployment',
  EVENT_STREAM_HEARTBEAT_MS: 'deployment',
  // Bound to the streaming function's 15-minute timeout.
  EVENT_STREAM_MAX_SECONDS: 'local',
  IDEMPOTENCY_TTL_SECONDS: 'deployment',
  SESSION_IDLE_TIMEOUT_SECONDS: 'deployment',
  MAX_TOOL_ROUNDS: 'deployment',
  TOOL_TIMEOUT_MS: 'deployment',
  TOOL_MAX_RESPONSE_BYTES: 'deployment',
  // Under CloudFront's 120 s wait for a streamed reply's first byte.
  TURN_TIMEOUT_SECONDS: 'stack',
  // Bound to the analysis function's 120 s timeout (functions/consumers.ts).
  ANALYSIS_DEADLINE_SECONDS: 'local',
  ANALYSIS_MODEL_ID: 'deployment',
  ANALYSIS_QUEUE_URL: 'stack',
  REPLAY_QUEUE_URL: 'stack',
  REPLAY_MAX_SESSIONS: 'deployment',
  REPLAY_MAX_TURNS: 'deployment',
  SECRETS_KMS_KEY_ID: 'stack',
  KMS_ENDPOINT: 'local',
  SECRETS_MANAGER_ENDPOINT: 'local',
  SECRETS_KEY_FILE: 'local',
  PLANS: 'deployment',
  QUOTA_CACHE_SECONDS: 'deployment',
  RATE_LIMITING: 'local',
  BILLING_PROVIDER: 'deployment',
  STRIPE_SECRET_KEY: 'secret',
  STRIPE_WEBHOOK_SECRET: 'secret',
  STRIPE_API_URL: 'local',
  STRIPE_PRICES: 'deployment',
  PAST_DUE_GRACE_DAYS: 'deployment',
  USAGE_ROLLUP_QUEUE_URL: 'stack',
  USAGE_ROLLUP_SECONDS: 'deployment',
  LOOPBACK_EGRESS_PORTS: 'local',
  PUBLIC_BASE_URL: 'stack',
  VOICE_RELAY_URL: 'stack',
  VOICE_RELAY_MANAGEMENT_ENDPOINT: 'stack',
  MEDIA_WORKER_URL: 'stack',
  TWILIO_API_BASE_URL: 'deployment',
  RECORDINGS_BUCKET: 'stack',
  S3_ENDPOINT: 'local',
  CALL_BACKSTOP_QUEUE_ARN: 'stack',
  SCHEDULER_ROLE_ARN: 'stack',
  SCHEDULER_ENDPOINT: 'local',
  CALL_BACKSTOP_GRACE_SECONDS: 'deployment',
  CALL_RING_TIMEOUT_SECONDS: 'deployment',
  KNOWLEDGE_INGESTION_QUEUE_URL: 'stack',
  KNOWLEDGE_UPLOAD_BUCKET: 'stack',
  S3_UPLOAD_ENDPOINT: 'local',
  S3_VECTORS_BUCKET: 'stack',
  KNOWLEDGE_VECTOR_DIR: 'local',
  KNOWLEDGE_SNAPSHOT_BUCKET: 'stack',
  SPEECH_ENGINES_DIR: 'local',
  DOCUMENT_PROCESSING_TIMEOUT_SECONDS: 'deployment',
  CAMPAIGN_QUEUE_URL: 'stack',
  // EventBridge Scheduler's tick is every minute, the default.
  CAMPAIGN_TICK_SECONDS: 'local',
  // Longer than the dispatcher function's 60 s timeout.
  CAMPAIGN_CLAIM_GRACE_SECONDS: 'local',
  DEEPGRAM_API_URL: 'local',
  CARTESIA_API_URL: 'local',
  RIME_API_URL: 'local',
  ELEVENLABS_API_URL: 'local',
  POLLY_ENDPOINT: 'local',
  TRANSCRIBE_STREAMING_ENDPOINT: 'local',
  OPENAI_COMPATIBLE_REALTIME_URL: 'local',
  NOVA_SONIC_ENDPOINT: 'local',
  DEEPGRAM_API_KEY: 'secret',
  CARTESIA_API_KEY: 'secret',
  RIME_API_KEY: 'secret',
  ELEVENLABS_API_KEY: 'secret',
  WHATSAPP_GRAPH_API_URL: 'deployment',
  WHATSAPP_INBOUND_QUEUE_URL: 'stack',
  WHATSAPP_MEDIA_BUCKET: 'stack',
  WHATSAPP_SEND_RETRY_MS: 'deployment',
  EGRESS_DENIED_PORTS: 'local',
} as const satisfies Record<SettingName, SettingSource>;

export const settingNames = Object.keys(settingSources) as SettingName[];

/** The zod rule of one setting, as the functions parse it: the deployment configuration checks its values with it. */
export const settingSchema = (name: SettingName): z.ZodType => configSchema.shape[name];

/** Parses configuration from an environment; fails with one message naming every bad variable. */
export function parseConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const result = configSchema.safeParse(env);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ');
    throw new Error(`Invalid configuration: ${problems}`);
  }
  if (result.data.SECRETS_KMS_KEY_ID && result.data.SECRETS_KEY_FILE) {
    throw new Error('Invalid configuration: set SECRETS_KMS_KEY_ID or SECRETS_KEY_FILE, not both');
  }
  for (const name of secretSettings) {
    if (result.data[name] && result.data[secretArnVariable(name)]) throw new Error(`Invalid configuration: set ${name} or ${secretArnVariable(name)}, not both`);
  }
  return result.data;
}

/**
 * Checks between settings that functions are given apart: every function reads the model lists (its catalogue), only
 * those that call a model read the base URL. So they run where every setting is known: at the start of the local
 * runtime here; on AWS the deployment file cannot list OpenAI-compatible models without their base URL.
 */
export function checkSettingsTogether(config: Config): void {
  for (const name of ['OPENAI_COMPATIBLE_MODELS', 'OPENAI_COMPATIBLE_EMBEDDING_MODELS', 'OPENAI_COMPATIBLE_STT_MODELS'] as const) {
    if (config[name].length > 0 && !config.OPENAI_COMPATIBLE_BASE_URL) throw new Error(`Invalid configuration: ${name} needs OPENAI_COMPATIBLE_BASE_URL`);
  }
  if (config.OPENAI_COMPATIBLE_REALTIME_MODELS.length > 0 && !config.OPENAI_COMPATIBLE_REALTIME_URL && !config.OPENAI_COMPATIBLE_BASE_URL) {
    throw new Error('Invalid configuration: OPENAI_COMPATIBLE_REALTIME_MODELS needs OPENAI_COMPATIBLE_BASE_URL');
  }
}
