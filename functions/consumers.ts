import { eventSource } from '../shared/events/bus.ts';
import type { QueueDefinition } from '../shared/platform/queue/queue-definition.ts';

/**
 * The asynchronous consumers of the table's stream, declared once: the CDK stack subscribes each to the stream
 * with its filter, and the local runtime hands them the same records (the stream poller and the TTL sweeper).
 */
export interface TableStreamConsumer {
  name: string;
  /** Handler module, relative to the repository root; it exports `handler`. */
  entry: string;
  /** Which records it gets: new items, or TTL deletions (REMOVE records made by the DynamoDB service), of these entities. */
  select: { records: 'inserts' | 'ttl-deletions'; entities: string[] };
  /** Publishes to the event bus (gets its name and the right to put events). */
  publishesEvents?: boolean;
  /** Reads and writes the table's items (beyond the stream records it is handed); only then may it. */
  worksOnTable: boolean;
  /** Queues it sends to, by the variable that holds each one's URL (it gets the URL and the right to send). */
  queueUrls?: Record<string, QueueDefinition>;
  /** Memory (and so CPU share) on Lambda, MB, when not the default of its kind (functions/lambda-functions.ts: the rule in docs/performance.md). */
  memoryMb?: number;
}

/**
 * The analysis function's timeout. It bounds a run (which also gives up at 80% of ANALYSIS_DEADLINE_SECONDS,
 * 120 s by default); raise it with the deadline. A run killed mid-way is retried after the visibility timeout
 * (its bound plus a margin, as for webhook delivery), too late for the deadline, which the deadline message
 * guarantees instead (docs/analysis.md#deadline).
 */
const analysisTimeoutSeconds = 120;

export const analysisQueue: QueueDefinition = {
  name: 'session-analysis',
  visibilityTimeoutSeconds: analysisTimeoutSeconds + 10,
  maxReceiveCount: 3,
};

/** A replay's sessions run one after another; a replay longer than an invocation queues the rest on its own queue. */
const replayTimeoutSeconds = 900;

export const replayQueue: QueueDefinition = {
  name: 'agent-replays',
  visibilityTimeoutSeconds: replayTimeoutSeconds + 10,
  maxReceiveCount: 2,
};

/** Roll-ups wait here until due; handling one is a few reads and one write. */
export const usageRollupQueue: QueueDefinition = {
  name: 'usage-rollups',
  visibilityTimeoutSeconds: 40,
  maxReceiveCount: 10,
};

export const tableStreamConsumers: readonly TableStreamConsumer[] = [
  {
    name: 'session-expiry',
    entry: 'functions/session-expiry/handler.ts',
    select: { records: 'ttl-deletions', entities: ['sessionExpiry'] },
    worksOnTable: true,
  },
  {
    name: 'event-relay',
    entry: 'functions/event-relay/handler.ts',
    select: { records: 'inserts', entities: ['outbox', 'message'] },
    publishesEvents: true,
    worksOnTable: false,
  },
  { name: 'event-log', entry: 'functions/event-log/handler.ts', select: { records: 'inserts', entities: ['outbox', 'message'] }, worksOnTable: true },
  {
    name: 'usage-meter',
    entry: 'functions/usage-meter/handler.ts',
    // Messages, the outbox records among which a voice session's end is, and changes of the stock (knowledge chunks).
    select: { records: 'inserts', entities: ['message', 'outbox', 'usageStockChange'] },
    queueUrls: { USAGE_ROLLUP_QUEUE_URL: usageRollupQueue },
    worksOnTable: true,
  },
  {
    name: 'analytics-aggregate',
    entry: 'functions/analytics-aggregate/handler.ts',
    // Messages, and the outbox records of sessions starting and ending.
    select: { records: 'inserts', entities: ['message', 'outbox'] },
    worksOnTable: true,
  },
  {
    name: 'analysis-dispatch',
    entry: 'functions/analysis-dispatch/handler.ts',
    select: { records: 'inserts', entities: ['analysisJob'] },
    queueUrls: { ANALYSIS_QUEUE_URL: analysisQueue },
    worksOnTable: false,
  },
];

/** A Lambda fed by an SQS queue (reporting partial batch failures); the local runtime polls the emulator for it. */
export interface QueueConsumer {
  name: string;
  /** Handler module, relative to the repository root; it exports `handler(event: SQSEvent): Promise<SQSBatchResponse>`. */
  entry: string;
  queue: QueueDefinition;
  batchSize: number;
  timeoutSeconds: number;
  /** The consumer learns its own queue's URL from this variable, to schedule later work on it. */
  queueUrlVariable?: string;
  /** Calls model providers (gets the right to invoke Bedrock models). */
  invokesModels?: boolean;
  /** Signs with secrets kept at rest (gets the right to open them: kms:Decrypt). */
  opensSecrets?: boolean;
  /** Writes knowledge stores' vectors (gets the vector store's configuration and rights). */
  usesKnowledge?: boolean;
  /** Places calls (docs/voice.md): gets the addresses the carrier and ConversationRelay use, and creates backstop schedules. */
  placesCalls?: boolean;
  /** Runs turns of agents with a knowledge store: reads its vectors only. */
  queriesKnowledge?: boolean;
  /** Reads and deletes uploaded document files (gets the uploads bucket's name and those rights). */
  readsUploads?: boolean;
  /** Other queues it sends to, by the variable that holds each one's URL (it gets the URL and the right to send). */
  sendsTo?: Record<string, QueueDefinition>;
  /** False for a consumer that never reads or writes the table (it gets no right to); true unless said. */
  worksOnTable?: boolean;
  /** Keeps WhatsApp customers' media (`write`: puts them in the media bucket; docs/whatsapp.md#media). */
  whatsappMedia?: 'write';
  /** Memory (and so CPU share) on Lambda, MB, when not the default of its kind (functions/lambda-functions.ts: the rule in docs/performance.md). */
  memoryMb?: number;
}

/** An EventBridge rule on the platform's bus: matching events go to the target queue, the EventBridge event as message body. */
export interface EventRule {
  name: string;
  description: string;
  /** An EventBridge event pattern; the local router implements exactly the fields used here. */
  pattern: { source: string[]; 'detail-type'?: string[] };
  target: QueueDefinition;
}

/**
 * The delivery function's real bound: a batch's attempts run side by side, each waits at most WEBHOOK_TIMEOUT_MS
 * (15 s at most), and the rest is a few writes.
 */
const webhookDeliveryTimeoutSeconds = 20;

/**
 * Messages of a crashed invocation come back after the visibility timeout, so it is the function's bound plus a
 * margin, not AWS's suggested 6×, which made a crash cost 6 minutes of delay. What that suggestion guards against,
 * throttled invocations, costs receives here instead: hence the larger receive count before dead-lettering. A
 * message received again while its first invocation still runs is delivered at least once, never lost.
 */
export const webhookDeliveryQueue: QueueDefinition = {
  name: 'webhook-deliveries',
  visibilityTimeoutSeconds: webhookDeliveryTimeoutSeconds + 10,
  maxReceiveCount: 30,
};

/** Ends a call whose carrier never reported the end: a few reads and one transaction, and a hang-up request. */
const callBackstopTimeoutSeconds = 20;

/** EventBridge Scheduler's one-time schedule of each call sends here (docs/voice.md#backstop). */
export const callBackstopQueue: QueueDefinition = {
  name: 'call-backstop',
  visibilityTimeoutSeconds: callBackstopTimeoutSeconds + 10,
  maxReceiveCount: 5,
};

/** Parsing, chunking and embedding one document (≤ 2 MB of text) stays well within this. */
const knowledgeIngestionTimeoutSeconds = 120;

/**
 * Documents to ingest (inline, URL and uploaded alike) and deleted stores to clean up, FIFO grouped by store: one
 * store's writes are handled one at a time, in order (docs/knowledge.md#ingestion).
 */
export const knowledgeIngestionQueue: QueueDefinition = {
  name: 'knowledge-ingestion.fifo',
  visibilityTimeoutSeconds: knowledgeIngestionTimeoutSeconds + 10,
  maxReceiveCount: 5,
  fifo: true,
};

/**
 * A dispatch cycle lasts at most 50 s (decision 272); the function's bound adds the calls being placed when the
 * cycle ends. A crashed cycle's message comes back after the visibility timeout, and the next tick dispatches anyway.
 */
const campaignDispatchTimeoutSeconds = 60;

/** The dispatcher's ticks and its per-campaign dispatch messages (docs/campaigns.md#dispatcher). */
export const campaignQueue: QueueDefinition = {
  name: 'campaign-dispatch',
  visibilityTimeoutSeconds: campaignDispatchTimeoutSeconds + 10,
  maxReceiveCount: 5,
};

/**
 * A WhatsApp message's handling: a media download (4 attempts of at most 30 s) and a voice note's transcription (at
 * most 60 s), a turn (at most TURN_TIMEOUT_SECONDS, 120 s by default, with its tool calls) and its sends, each
 * retried with backoff (WHATSAPP_SEND_RETRY_MS, 5.25 s by default).
 */
const whatsappInboundTimeoutSeconds = 330;

/**
 * Meta's notifications between the webhook's 200 and their handling (docs/whatsapp.md#processing): FIFO, one
 * group per number and customer, so a customer's messages are answered in order and one at a time.
 */
export const whatsappInboundQueue: QueueDefinition = {
  name: 'whatsapp-inbound.fifo',
  visibilityTimeoutSeconds: whatsappInboundTimeoutSeconds + 10,
  maxReceiveCount: 5,
  fifo: true,
};

/** S3's Object Created events of the uploads bucket, as EventBridge delivers them; the router's work is one send each. */
export const knowledgeUploadsQueue: QueueDefinition = {
  name: 'knowledge-uploads',
  visibilityTimeoutSeconds: 40,
  maxReceiveCount: 5,
};

/**
 * S3 Object Created events of the document uploads bucket (EventBridge notifications, on the account's default bus)
 * go to the uploads queue. Not straight to the FIFO ingestion queue: an EventBridge target's message group can only
 * be a fixed value or a whole field of the event, and the store is a part of the object key.
 */
export const uploadEventRule = {
  name: 'knowledge-uploads-received',
  description: 'A document file uploaded with a presigned POST: the router queues its ingestion in its store\'s group',
  keyPrefix: 'uploads/',
  target: knowledgeUploadsQueue,
} as const;

export const queueConsumers: readonly QueueConsumer[] = [
  {
    name: 'webhook-delivery',
    entry: 'functions/webhook-delivery/handler.ts',
    queue: webhookDeliveryQueue,
    batchSize: 10,
    timeoutSeconds: webhookDeliveryTimeoutSeconds,
    queueUrlVariable: 'WEBHOOK_QUEUE_URL',
    opensSecrets: true,
  },
  {
    name: 'analysis',
    entry: 'functions/analysis/handler.ts',
    queue: analysisQueue,
    batchSize: 10,
    timeoutSeconds: analysisTimeoutSeconds,
    invokesModels: true,
    // Builds a model's prompt from a whole transcript and parses its answer: CPU-bound between model calls.
    memoryMb: 1024,
  },
  {
    name: 'replay',
    entry: 'functions/replay/handler.ts',
    queue: replayQueue,
    batchSize: 1,
    timeoutSeconds: replayTimeoutSeconds,
    queueUrlVariable: 'REPLAY_QUEUE_URL',
    invokesModels: true,
    // Reading a FUNCTION_TOOL's definition opens its signing secret, as a turn does (it is never called live).
    opensSecrets: true,
    queriesKnowledge: true,
  },
  {
    name: 'usage-rollup',
    entry: 'functions/usage-rollup/handler.ts',
    queue: usageRollupQueue,
    batchSize: 10,
    timeoutSeconds: 30,
    queueUrlVariable: 'USAGE_ROLLUP_QUEUE_URL',
  },
  {
    name: 'call-backstop',
    entry: 'functions/call-backstop/handler.ts',
    queue: callBackstopQueue,
    batchSize: 10,
    timeoutSeconds: callBackstopTimeoutSeconds,
    // Opens the carrier's auth token to hang up a call still up.
    opensSecrets: true,
  },
  {
    name: 'campaign-dispatcher',
    entry: 'functions/campaign-dispatcher/handler.ts',
    queue: campaignQueue,
    // One campaign per invocation: a cycle runs for up to 50 s, and campaigns are dispatched side by side.
    batchSize: 1,
    timeoutSeconds: campaignDispatchTimeoutSeconds,
    queueUrlVariable: 'CAMPAIGN_QUEUE_URL',
    // Opens the carrier's auth token to place calls.
    opensSecrets: true,
    placesCalls: true,
  },
  {
    name: 'knowledge-ingestion',
    entry: 'functions/knowledge-ingestion/handler.ts',
    queue: knowledgeIngestionQueue,
    // One document an invocation: the timeout bounds one document, and a batch never puts one store's slow
    // document in front of another store's (groups interleave across concurrent invocations instead).
    batchSize: 1,
    timeoutSeconds: knowledgeIngestionTimeoutSeconds,
    queueUrlVariable: 'KNOWLEDGE_INGESTION_QUEUE_URL',
    invokesModels: true,
    usesKnowledge: true,
    readsUploads: true,
    // Parses PDFs of up to 2 MB of text (PDF.js) and chunks and embeds them: the heaviest working set and CPU of all.
    memoryMb: 1024,
  },
  {
    name: 'knowledge-upload-router',
    entry: 'functions/knowledge-upload-router/handler.ts',
    queue: knowledgeUploadsQueue,
    batchSize: 10,
    timeoutSeconds: 30,
    sendsTo: { KNOWLEDGE_INGESTION_QUEUE_URL: knowledgeIngestionQueue },
    worksOnTable: false,
  },
  {
    name: 'whatsapp-inbound',
    entry: 'functions/whatsapp-inbound/handler.ts',
    queue: whatsappInboundQueue,
    batchSize: 10,
    timeoutSeconds: whatsappInboundTimeoutSeconds,
    invokesModels: true,
    // Opens the numbers' access tokens (to send, to download media) and the agents' tools' signing secrets.
    opensSecrets: true,
    queriesKnowledge: true,
    whatsappMedia: 'write',
    // Runs turns, as chat-messages does.
    memoryMb: 1024,
  },
];

/** A function EventBridge invokes on a schedule (locally, the schedule ticker calls its handler). */
export interface ScheduledFunction {
  name: string;
  entry: string;
  description: string;
  rateMinutes: number;
  timeoutSeconds: number;
  /** Memory (and so CPU share) on Lambda, MB, when not the default of its kind (functions/lambda-functions.ts: the rule in docs/performance.md). */
  memoryMb?: number;
}

export const scheduledFunctions: readonly ScheduledFunction[] = [
  {
    name: 'knowledge-sweeper',
    entry: 'functions/knowledge-sweeper/handler.ts',
    description: 'Fails knowledge documents still PROCESSING past their deadline with TIMEOUT',
    rateMinutes: 5,
    timeoutSeconds: 60,
  },
];

export const eventRules: readonly EventRule[] = [
  {
    name: 'events-to-webhook-deliveries',
    description: 'Every domain event, for delivery to the webhook endpoints subscribed to it',
    pattern: { source: [eventSource] },
    target: webhookDeliveryQueue,
  },
];
