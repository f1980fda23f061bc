/**
 * The storage ports the domain depends on. Their only implementation is DynamoDB (`shared/store/`); the
 * interfaces keep domain code free of SDK details and make the dependencies of each use case explicit.
 */
import type { DomainEvent } from './events/events.ts';
import type { Transcript } from './conversations/transcript.ts';
import type { AnalysisConfig, AnalysisResult } from './analysis/analysis-schemas.ts';
import type { Agent } from './agents/agent-schemas.ts';
import type { ApiKey } from './identity/api-key-schemas.ts';
import type { EndedReason, Message, Session, SessionState } from './conversations/session-schemas.ts';
import type { ExecutableTool, Tool } from './agents/tool-schemas.ts';
import type { DeliveryState, WebhookDelivery } from './webhooks/webhook-schemas.ts';
import type { SubscriptionStatus } from './billing/billing-schemas.ts';
import type { Granularity, MeteredRecord, UsageCounts } from './billing/usage.ts';
import type { AnalyticsRecord, EndedSessionFacts } from './billing/analytics.ts';
import type { PhoneNumber, TwilioCallStatus, VoiceCall } from './voice/voice-schemas.ts';

export interface Organization {
  id: string;
  name: string;
  createdAt: string;
}

export interface OrgStore {
  /** Creates the organization unless it exists; returns the stored one either way. */
  ensure(org: Organization): Promise<Organization>;
  get(orgId: string): Promise<Organization | undefined>;
}

export interface KeyIdentity {
  orgId: string;
  keyId: string;
  scopes: string[];
  rateLimit?: { requestsPerSecond: number; burst: number } | undefined;
  keyHash: string;
}

export interface ApiKeyStore {
  /** Stores the key and its hash lookup together; false when that hash is already registered. */
  create(key: ApiKey, keyHash: string, completion?: IdempotencyCompletion): Promise<boolean>;
  list(orgId: string): Promise<ApiKey[]>;
  delete(orgId: string, keyId: string): Promise<boolean>;
  findByHash(keyHash: string): Promise<KeyIdentity | undefined>;
  recordUse(orgId: string, keyId: string, at: string): Promise<void>;
}

export interface AgentStore {
  /** Throws ToolsNotFoundError when an attached tool does not exist (checked in the same transaction). */
  create(agent: Agent, completion?: IdempotencyCompletion): Promise<void>;
  get(orgId: string, agentId: string): Promise<Agent | undefined>;
  list(orgId: string): Promise<Agent[]>;
  /** Writes `next` if the stored agent is still `previous`; throws ConcurrentModificationError otherwise. */
  replace(previous: Agent, next: Agent): Promise<void>;
  delete(orgId: string, agentId: string): Promise<boolean>;
}

export interface ToolStore {
  /** Throws ToolNameTakenError when the organization already has a tool of that name. */
  create(tool: Tool, functionSecret?: string, completion?: IdempotencyCompletion): Promise<void>;
  get(orgId: string, toolId: string): Promise<Tool | undefined>;
  /** Tools by id with the secret their FUNCTION_TOOL requests are signed with, for running them. */
  executableTools(orgId: string, toolIds: readonly string[]): Promise<ExecutableTool[]>;
  list(orgId: string): Promise<Tool[]>;
  /** `functionSecret`, when given, becomes the tool's new signing secret. */
  replace(previous: Tool, next: Tool, functionSecret?: string): Promise<void>;
  /** Deletes an unattached tool; 'attached' when an agent still uses it, 'missing' when there is none. */
  delete(orgId: string, toolId: string): Promise<'deleted' | 'attached' | 'missing'>;
}

/** What a secret at rest belongs to: sealed under this context, it opens only with the same one. */
export interface SecretContext {
  orgId: string;
  purpose: 'webhook-secret' | 'function-tool-secret' | 'telephony-auth-token' | 'whatsapp-access-token' | 'whatsapp-app-secret' | 'whatsapp-verify-token';
  /** The id of the item that holds it (the endpoint, the tool). */
  id: string;
}

/**
 * Encrypts the secrets the stores keep (webhook and function-tool signing secrets) before they reach the table:
 * under a KMS key on AWS, a local key file on this machine (`shared/secrets/`, docs/security.md#secrets-at-rest).
 */
export interface SecretCipher {
  /** The secret as the table holds it: `sealed:v1:…`, bound to `context`. */
  seal(plaintext: string, context: SecretContext): Promise<string>;
  /**
   * The secret a stored value holds; a value stored before secrets were sealed (no `sealed:` prefix) is returned as
   * is. Fails (SecretUnreadableError) when the value was sealed under another context, or altered.
   */
  open(stored: string, context: SecretContext): Promise<string>;
}

export interface StoredResponse {
  status: number;
  body: string;
  headers: Record<string, string>;
}

export type IdempotencyClaim =
  | { outcome: 'claimed'; claimId: string }
  | { outcome: 'replay'; response: StoredResponse }
  | { outcome: 'mismatch' }
  | { outcome: 'in-progress' };

export interface IdempotencyStore {
  /** Claims `key` for a request with this fingerprint, or says why it cannot be claimed. */
  claim(orgId: string, key: string, fingerprint: string): Promise<IdempotencyClaim>;
  /** Records the response of a claimed key in a write of its own. */
  complete(orgId: string, key: string, response: StoredResponse): Promise<void>;
  /** The response of a claimed key, sealed, for the store to record in the transaction that creates the resource. */
  seal(orgId: string, key: string, claimId: string, response: StoredResponse): IdempotencyCompletion;
  release(orgId: string, key: string): Promise<void>;
}

/**
 * Completes an idempotent request in the same transaction as the resource it created, so that no crash can
 * leave the resource without its recorded response (a retry then replays it instead of creating another).
 * Written only while the claim `claimId` still holds the key.
 */
export interface IdempotencyCompletion {
  orgId: string;
  keyDigest: string;
  claimId: string;
  sealedResponse: string;
}

/** Given to the operation of an idempotent request: seals the response body it is about to return. */
export type SealResponse = (body: unknown) => IdempotencyCompletion;

/** A session as stored: the record plus the turn bookkeeping that never leaves the store and the domain. */
export interface StoredSession extends Session {
  /** Sequence number the next message gets. */
  nextSeq: number;
  /** Epoch ms until which a running turn keeps the session active; set only when it could outlast the window. */
  activeUntil?: number | undefined;
  /** Set once `session.ended` is recorded (its event id): the analysis that went out with it exists. */
  endedEventId?: string | undefined;
  /** The analysis job whose result is stored, so that a redelivered re-run does not announce it twice. */
  analysisJobId?: string | undefined;
  /** How many of its messages were changed after being written (interrupted replies of a call): cached histories compare it. */
  historyRevision?: number | undefined;
}

/**
 * A request to analyse an ended session: written with the end (`initial`) or by a re-run (`rerun`), in the
 * session's partition; the table stream hands it to the analysis queue (docs/analysis.md).
 */
export interface AnalysisJob {
  jobId: string;
  orgId: string;
  sessionId: string;
  purpose: 'initial' | 'rerun';
  /** The moment the deadline counts from: when the end was recorded, or when the re-run was asked for. */
  deadlineFrom: string;
}

/** A job on the analysis queue: run it, or (initial jobs only) make sure `session.ended` has left by its deadline. */
export interface AnalysisQueueMessage {
  kind: 'analysis.run' | 'analysis.deadline';
  job: AnalysisJob;
  /** Epoch ms before which the message must not be handled. */
  notBefore: number;
}

export type AnalysisQueue = ScheduledQueue<AnalysisQueueMessage>;

export interface AnalysisInput {
  transcript: Transcript;
  config: AnalysisConfig;
  /** The agent's language tag, when set. */
  language?: string | undefined;
  endedReason?: EndedReason | undefined;
}

/** What a model contributes to an analysis: the enabled blocks and the summary. */
export type AnalysisOutput = Pick<AnalysisResult, 'summary' | 'intent' | 'resolution' | 'sentiment' | 'extractedData'>;

/** A model that analyses sessions: the built-in rules, or a provider model asked for structured output. */
export type Analyzer = (input: AnalysisInput, signal: AbortSignal) => Promise<AnalysisOutput>;

export interface TurnContext {
  session: StoredSession | undefined;
  agent: Agent | undefined;
  tools: ExecutableTool[];
}

/** Which sessions a list shows; `state` is the state the API shows, so an idle OPEN session is EXPIRED. */
export interface SessionFilter {
  agentId?: string | undefined;
  state?: SessionState | undefined;
  platform?: string | undefined;
  createdAfter?: string | undefined;
  /** Which OPEN sessions are idle: last active before `lastActivityBefore` (ISO), and no turn holds them past `nowMs`. */
  idle: { lastActivityBefore: string; nowMs: number };
}

export interface SessionPageRequest {
  order: 'asc' | 'desc';
  /** Where the previous page ended (its last session's `<createdAt>#<id>`): this page starts after it. */
  after?: string | undefined;
  /** Matching sessions to pass over before the page (a page asked for by number, without a cursor). */
  skip: number;
  limit: number;
}

export interface SessionStore {
  /** The session with its expiry item and its `session.created` event, together. */
  create(session: StoredSession, expiresAt: number, events: DomainEvent[], completion?: IdempotencyCompletion): Promise<void>;
  get(orgId: string, sessionId: string): Promise<StoredSession | undefined>;
  /** One page of the sessions matching the filter, and whether more follow. */
  list(orgId: string, filter: SessionFilter, page: SessionPageRequest): Promise<{ sessions: StoredSession[]; hasMore: boolean }>;
  /** How many sessions match the filter, from counters kept with every create and end (not by reading them). */
  count(orgId: string, filter: SessionFilter): Promise<number>;
  messages(orgId: string, sessionId: string): Promise<Message[]>;
  /** The messages numbered `fromSeq` to `toSeq` (inclusive; numbers start at 1 and have no gaps), in order. */
  messageRange(orgId: string, sessionId: string, fromSeq: number, toSeq: number): Promise<Message[]>;
  /**
   * OPEN → CLOSED/EXPIRED with its events and its analysis job, exactly once; false when it was no longer OPEN or
   * active since.
   */
  end(session: StoredSession, ended: Session, events: DomainEvent[], job: AnalysisJob, options?: { unlessActiveSince?: string }): Promise<boolean>;
  /** Records a re-run's analysis job; the session must have ended. */
  requestAnalysis(job: AnalysisJob, completion?: IdempotencyCompletion): Promise<void>;
  /**
   * Stores the session's first analysis with its `session.ended` event, exactly once: false when `session.ended`
   * was already recorded (by another attempt, the deadline, or a re-run).
   */
  completeAnalysis(session: StoredSession, analysis: AnalysisResult, jobId: string, ended: DomainEvent, updatedAt: string): Promise<boolean>;
  /**
   * Replaces the analysis of a session whose `session.ended` has gone out, with its `session.updated` event; false
   * when this job's result is already stored (a redelivered job).
   */
  replaceAnalysis(session: StoredSession, analysis: AnalysisResult, jobId: string, updated: DomainEvent, updatedAt: string): Promise<boolean>;
  readTurnContext(orgId: string, sessionId: string, agentId: string, toolIds: readonly string[]): Promise<TurnContext>;
  holdForTurn(session: StoredSession, at: { nowIso: string; activeUntil: number; expiresAt: number }): Promise<boolean>;
  /**
   * A reply cut short on a call: its `content` becomes what was spoken and `metadata.interruption` records the
   * rest, and the session's `historyRevision` counts the change (with it). False when message `seq` is not an
   * assistant reply.
   */
  truncateReply(orgId: string, sessionId: string, seq: number, spoken: string, interruption: Record<string, unknown>): Promise<boolean>;
  /** Appends a turn's messages after `session.nextSeq`; 'conflict' when another turn appended first. */
  /** `completion` records the idempotent send's response in the same transaction (none without an Idempotency-Key). */
  commitTurn(session: StoredSession, messages: readonly Message[], at: { nowIso: string; expiresAt: number }, completion?: IdempotencyCompletion): Promise<'committed' | 'conflict'>;
}

/** A webhook endpoint as the API shows it; its signing secrets never appear after creation or rotation. */
export interface WebhookEndpoint {
  id: string;
  orgId: string;
  url: string;
  /** Event types it receives; `*` for all. */
  events: string[];
  description?: string | undefined;
  enabled: boolean;
  createdAt: string;
  updatedAt: string;
}

/** An endpoint as delivery uses it: with the secrets to sign with (the previous one while a rotation overlaps). */
export interface DeliverableEndpoint extends WebhookEndpoint {
  secrets: string[];
}

export interface WebhookStore {
  /** Stores the endpoint with its first signing secret. */
  create(endpoint: WebhookEndpoint, secret: string, completion?: IdempotencyCompletion): Promise<void>;
  get(orgId: string, endpointId: string): Promise<WebhookEndpoint | undefined>;
  list(orgId: string): Promise<WebhookEndpoint[]>;
  replace(previous: WebhookEndpoint, next: WebhookEndpoint): Promise<void>;
  delete(orgId: string, endpointId: string): Promise<boolean>;
  /** Makes `secret` the signing secret; the old one keeps signing too until `previousValidUntil` (epoch ms). */
  rotateSecret(orgId: string, endpointId: string, secret: string, previousValidUntil: number): Promise<boolean>;
  /** The organization's enabled endpoints subscribed to this event type, with their current secrets. */
  deliverableFor(orgId: string, eventType: string, nowMs: number): Promise<DeliverableEndpoint[]>;
  /** One endpoint with its current secrets, for a delivery attempt (undefined when deleted). */
  deliverable(orgId: string, endpointId: string, nowMs: number): Promise<DeliverableEndpoint | undefined>;
  /** Turns the endpoint off (its receiver answered 410 Gone); false when it no longer exists. */
  disable(orgId: string, endpointId: string, at: string): Promise<boolean>;
}

/** A delivery with the request body every attempt sends: the event's payload, serialized once. */
export interface StoredDelivery {
  orgId: string;
  delivery: WebhookDelivery;
  body: string;
}

/** The fields an attempt's outcome changes; `undefined` removes a field. */
export type DeliveryChanges = Partial<Omit<WebhookDelivery, 'id' | 'endpointId' | 'eventId' | 'eventType' | 'createdAt'>>;

export interface WebhookDeliveryStore {
  /** Records a delivery after its first attempt; false when it is already recorded (the event was handled before). */
  create(stored: StoredDelivery, expiresAt: number): Promise<boolean>;
  /**
   * Records first attempts that succeeded, together and unconditionally: whatever a duplicate of the event recorded
   * before, the event has now been delivered.
   */
  recordDelivered(stored: readonly StoredDelivery[], expiresAt: number): Promise<void>;
  get(orgId: string, endpointId: string, deliveryId: string): Promise<StoredDelivery | undefined>;
  /** Applies an attempt's outcome if the delivery is still PENDING after `expectedAttempts`; false otherwise. */
  recordAttempt(orgId: string, endpointId: string, deliveryId: string, expectedAttempts: number, changes: DeliveryChanges): Promise<boolean>;
  /** DELIVERED or DEAD_LETTERED back to PENDING for a replay; the reopened delivery, 'pending' or 'missing'. */
  reopen(orgId: string, endpointId: string, deliveryId: string, at: string): Promise<WebhookDelivery | 'pending' | 'missing'>;
  /** Up to `limit` deliveries of the endpoint in `createdAt` order, optionally of one state only. */
  /** Up to `limit` deliveries in `direction` order, after the delivery `after` when given. */
  list(
    orgId: string,
    endpointId: string,
    options: { state?: DeliveryState | undefined; direction: 'asc' | 'desc'; limit: number; after?: string | undefined },
  ): Promise<WebhookDelivery[]>;
}

/** One attempt of a delivery, scheduled on the delivery queue. */
export interface AttemptRequest {
  kind: 'webhook.attempt';
  orgId: string;
  endpointId: string;
  deliveryId: string;
  /** The attempt's number; it goes ahead only if the delivery has had exactly `attempt - 1`. */
  attempt: number;
  /** Position in the retry schedule: the delay after this attempt fails is the schedule's entry at this index. */
  step: number;
  /** Epoch ms before which the attempt must not be made. */
  notBefore: number;
}

/** Where messages wait until they are due (`notBefore`, epoch ms; SQS, whose delay limit is the adapter's concern). */
export interface ScheduledQueue<Message extends { notBefore: number }> {
  schedule(messages: readonly Message[]): Promise<void>;
}

/** Where later delivery attempts wait until they are due. */
export type DeliveryQueue = ScheduledQueue<AttemptRequest>;

/** Where an entry sits in its organization's event log: ordered by the time it was logged (epoch ms), then event id. */
export interface LogPosition {
  loggedAt: number;
  /** Without it, the position is after every entry logged in that millisecond. */
  eventId?: string | undefined;
}

/** A domain event as its organization's event log holds it, for the SSE event stream. */
export interface LoggedEvent {
  loggedAt: number;
  event: DomainEvent;
}

export interface EventLogStore {
  /** Adds the event to its organization's log at `loggedAt`; the entry is kept until `expiresAt` (epoch s). */
  append(entry: LoggedEvent, expiresAt: number): Promise<void>;
  /** Up to `limit` entries after `after`, in log order, strongly consistent; `more` when others may follow. */
  read(orgId: string, after: LogPosition, limit: number): Promise<{ entries: LoggedEvent[]; more: boolean }>;
}

export interface UsageStore {
  /**
   * Counts the records (all of one organization) exactly once: those a session's meter is already past are
   * skipped. True when anything was added. Throws CountingGapError when a message before these was not counted yet.
   */
  record(orgId: string, records: readonly MeteredRecord[]): Promise<boolean>;
  /** The counters of the buckets from `fromBucket` to `toBucket` (inclusive) that have any, by bucket. */
  counters(orgId: string, granularity: Granularity, fromBucket: string, toBucket: string): Promise<Map<string, UsageCounts>>;
  /** The month's counters (`yyyy-mm`) with the stocks as they are now (`knowledge_chunks`), strongly consistent. */
  periodCounts(orgId: string, month: string): Promise<UsageCounts>;
  /**
   * Marks a roll-up as due at `due` (epoch ms) unless one is pending already (a pending one older than
   * `staleBefore` counts as lost); true when this call marked it, and must then queue it.
   */
  markRollupDue(orgId: string, due: number, staleBefore: number): Promise<boolean>;
  /** Removes the mark `due` (its queue message could not be sent). */
  unmarkRollup(orgId: string, due: number): Promise<void>;
  rollupState(orgId: string): Promise<RollupState>;
  /**
   * Ends the pending roll-up `due`: records what was reported and writes its `usage.updated` event, or, without
   * one, only clears the mark. False when the mark is not `due` any more (a duplicate message).
   */
  completeRollup(orgId: string, due: number, report?: { at: number; metrics: Record<string, unknown>; event: DomainEvent }): Promise<boolean>;
}

/** What the organization's last `usage.updated` said, and when it was sent; the roll-up pending, if any. */
export interface RollupState {
  pendingUntil?: number | undefined;
  lastSentAt?: number | undefined;
  reported?: Record<string, unknown> | undefined;
}

export interface RollupMessage {
  orgId: string;
  /** The roll-up's mark: when it is due (epoch ms). */
  notBefore: number;
}

/** The subscription as stored: its period is the calendar month, computed, not stored. */
export interface StoredSubscription {
  orgId: string;
  subscriptionId: string;
  status: SubscriptionStatus;
  currentPlan: string;
  provider: 'manual' | 'stripe';
  /** The billing provider's ids (Stripe customer and subscription), when it has them. */
  providerCustomerId?: string | undefined;
  providerSubscriptionId?: string | undefined;
  pastDueSince?: string | undefined;
  createdAt: string;
  updatedAt: string;
}

export interface SubscriptionStore {
  get(orgId: string): Promise<StoredSubscription | undefined>;
  /**
   * Writes `next` with its `subscription.updated` outbox event, if the stored subscription is still `previous`
   * (none stored: still none); false when it changed meanwhile.
   */
  replace(previous: StoredSubscription | undefined, next: StoredSubscription, event: DomainEvent): Promise<boolean>;
}

export interface RateLimitStore {
  /**
   * Moves the bucket's theoretical arrival time from `expected` (undefined: the bucket has none yet) to `next`
   * (epoch ms); when it was not `expected`, nothing is written and the stored value is returned.
   */
  advance(orgId: string, bucket: string, expected: number | undefined, next: number): Promise<{ advanced: true } | { advanced: false; stored: number | undefined }>;
}

/** One pre-aggregated analytics item: an agent's counts in one hour or day. */
export interface AnalyticsAggregate {
  bucket: string;
  agentId: string;
  counts: Record<string, number>;
}

export interface AnalyticsStore {
  /** Adds the records exactly once (a session's marker `#ANALYTICS` is past what was counted). */
  record(orgId: string, records: readonly AnalyticsRecord[]): Promise<void>;
  /** The agent and the end facts of sessions, for the records that need them. */
  sessionFacts(orgId: string, sessionIds: readonly string[]): Promise<Map<string, { agentId: string } & EndedSessionFacts>>;
  /** The aggregates of the buckets from `fromBucket` to `toBucket` (inclusive), of one agent or all. */
  aggregates(orgId: string, granularity: 'hour' | 'day', fromBucket: string, toBucket: string, agentId?: string): Promise<AnalyticsAggregate[]>;
}

/** The changes of a subscription the API makes (the provider drives payments itself). */
export type ProviderChange = { kind: 'changePlan'; plan: string } | { kind: 'pause' } | { kind: 'resume' } | { kind: 'cancel' };

/** Who bills the organization: told of every change the API makes, before it is recorded. */
export interface BillingProvider {
  readonly name: 'manual' | 'stripe';
  /** Throws when the provider refuses; the change is then not recorded. */
  apply(subscription: StoredSubscription, change: ProviderChange): Promise<void>;
}

/** An organization's account at its carrier. The auth token is sealed at rest and never leaves in a response. */
export interface TelephonyCredentials {
  accountSid: string;
  authToken: string;
}

export interface OutboundCallRequest {
  from: string;
  to: string;
  /** What the carrier runs once the callee answers (ConversationRelay to our WebSocket API). */
  twiml: string;
  /** Receives every status of the call, signed with the account's auth token. */
  statusCallback: string;
  /** The carrier ends the call itself after this many seconds: the call's `ttl`. */
  timeLimitSeconds: number;
  /** The call is recorded; this URL hears when the recording is ready. */
  recordingStatusCallback: string;
  /** How long it rings before it counts as not answered. */
  ringTimeoutSeconds: number;
}

/** The carrier's REST API (Twilio's; `shared/voice/twilio-client.ts`). */
export interface Telephony {
  createCall(credentials: TelephonyCredentials, request: OutboundCallRequest): Promise<{ callSid: string; status: TwilioCallStatus }>;
  /** Ends a call in progress (the agent hung up). */
  hangUp(credentials: TelephonyCredentials, callSid: string): Promise<void>;
  /** A finished recording's audio (MP3). */
  fetchRecording(credentials: TelephonyCredentials, recordingSid: string): Promise<{ body: Uint8Array; contentType: string }>;
  /** Deletes the carrier's copy once ours is stored; a recording already gone is not an error. */
  deleteRecording(credentials: TelephonyCredentials, recordingSid: string): Promise<void>;
}

/** A call the carrier never reports the end of is ended anyway, at a time fixed when it starts. */
export interface CallBackstop {
  /** One one-time schedule per call (EventBridge Scheduler; a stand-in locally) that ends it at `at` if still open. */
  schedule(call: { orgId: string; sessionId: string }, at: Date): Promise<void>;
}

/** Where call recordings are kept (S3; fauxqs's S3 locally), handed out as short-lived signed URLs. */
export interface RecordingStore {
  put(key: string, body: Uint8Array, contentType: string): Promise<void>;
  signedUrl(key: string, expiresInSeconds: number): Promise<string>;
}

/** Sends to the carrier's side of a ConversationRelay WebSocket (API Gateway's connection-management API). */
export interface RelayConnections {
  send(connectionId: string, message: Record<string, unknown>): Promise<void>;
}

export interface StoredPhoneNumber extends PhoneNumber {
  orgId: string;
}

/** Who owns a number worldwide: how an inbound call finds its organization. */
export interface PhoneNumberOwner {
  orgId: string;
  phoneNumberId: string;
}

export interface VoiceStore {
  /** Stores the number with its worldwide claim; throws PhoneNumberTakenError when any organization has it. */
  createPhoneNumber(number: StoredPhoneNumber): Promise<void>;
  getPhoneNumber(orgId: string, phoneNumberId: string): Promise<StoredPhoneNumber | undefined>;
  listPhoneNumbers(orgId: string, limit: number): Promise<StoredPhoneNumber[]>;
  replacePhoneNumber(previous: StoredPhoneNumber, next: StoredPhoneNumber): Promise<void>;
  /** Removes the number and its claim; false when there was none. */
  deletePhoneNumber(orgId: string, phoneNumberId: string): Promise<boolean>;
  phoneNumberOwner(e164: string): Promise<PhoneNumberOwner | undefined>;
  putCredentials(orgId: string, credentials: TelephonyCredentials, updatedAt: string): Promise<void>;
  getCredentials(orgId: string): Promise<(TelephonyCredentials & { updatedAt: string }) | undefined>;
  deleteCredentials(orgId: string): Promise<boolean>;
  /**
   * The session of a call, its expiry item, its call item and `events`, together; false when the session exists
   * already (a retried inbound webhook).
   */
  createCall(session: StoredSession, expiresAt: number, call: VoiceCall, events: DomainEvent[]): Promise<boolean>;
  /**
   * Announces an outbound call (`session.created`) once the carrier has it: its id on the call and as the session's
   * `roomName`. Without a call id (the carrier refused it) only the event is recorded.
   */
  recordCarrierCall(session: StoredSession, callSid: string | undefined, created: DomainEvent): Promise<void>;
  getCall(orgId: string, sessionId: string): Promise<VoiceCall | undefined>;
  /**
   * Moves the call's status forward (statuses never go back: a late `ringing` after `completed` changes nothing);
   * false when the call already had this status or a later one.
   */
  advanceCall(orgId: string, sessionId: string, status: TwilioCallStatus, changes: Partial<VoiceCall>): Promise<boolean>;
  markAgentHangup(orgId: string, sessionId: string, at: string): Promise<void>;
  /** Where the call's recording is kept, once copied from the carrier. */
  recordRecording(orgId: string, sessionId: string, recording: { recordingKey: string; recordingSid: string }): Promise<void>;
  /**
   * Keeps the hash of the token of the relay URL just given to the carrier: the one upgrade that may open the call's
   * relay. Nothing is written once the relay is connected (its URL is single-use).
   */
  offerRelay(orgId: string, sessionId: string, tokenHash: string): Promise<void>;
  /**
   * Binds a WebSocket connection to its call, consuming the relay token atomically: false when the token is not the
   * call's offered one or the call's relay is already connected (one connection per call, once).
   */
  claimRelay(connectionId: string, orgId: string, sessionId: string, tokenHash: string): Promise<boolean>;
  connection(connectionId: string): Promise<{ orgId: string; sessionId: string } | undefined>;
}
