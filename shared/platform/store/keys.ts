/** The sort keys of a stock's change records begin with it, then the time of the change (RFC 3339, sortable). */
const usageStockChangePrefix = 'STOCKCHANGE#';

/**
 * Key builders. Every item of a tenant lives under a partition key that starts with its organization, so no
 * access path can reach another organization's data. The one exception is the API-key hash lookup, which is
 * how a request finds its organization in the first place.
 */
export const keys = {
  org: (orgId: string) => ({ pk: `ORG#${orgId}`, sk: '#ORG' }),
  apiKey: (orgId: string, keyId: string) => ({ pk: `ORG#${orgId}`, sk: `APIKEY#${keyId}` }),
  apiKeyPrefix: 'APIKEY#',
  apiKeyHash: (keyHash: string) => ({ pk: `APIKEYHASH#${keyHash}`, sk: '#APIKEYHASH' }),
  agent: (orgId: string, agentId: string) => ({ pk: `ORG#${orgId}`, sk: `AGENT#${agentId}` }),
  agentPrefix: 'AGENT#',
  /** An agent's versions and its outbox events (`agent.updated`, `agent.published`). */
  agentPartition: (orgId: string, agentId: string) => `ORG#${orgId}#AGENT#${agentId}`,
  /** Zero-padded, so the versions sort by number. */
  agentVersion: (orgId: string, agentId: string, number: number) => ({ pk: `ORG#${orgId}#AGENT#${agentId}`, sk: `VERSION#${String(number).padStart(10, '0')}` }),
  agentVersionPrefix: 'VERSION#',
  tool: (orgId: string, toolId: string) => ({ pk: `ORG#${orgId}`, sk: `TOOL#${toolId}` }),
  toolPrefix: 'TOOL#',
  toolName: (orgId: string, name: string) => ({ pk: `ORG#${orgId}`, sk: `TOOLNAME#${name.toLowerCase()}` }),
  webhook: (orgId: string, endpointId: string) => ({ pk: `ORG#${orgId}`, sk: `WEBHOOK#${endpointId}` }),
  webhookPrefix: 'WEBHOOK#',
  /** Deliveries of one endpoint; delivery ids are time-ordered, so the sort key lists them oldest first. */
  webhookDelivery: (orgId: string, endpointId: string, deliveryId: string) => ({
    pk: `ORG#${orgId}#WEBHOOK#${endpointId}`,
    sk: `DELIVERY#${deliveryId}`,
  }),
  webhookDeliveries: (orgId: string, endpointId: string) => `ORG#${orgId}#WEBHOOK#${endpointId}`,
  webhookDeliveryPrefix: 'DELIVERY#',
  /** The organization's recent events, in the order they were logged, for the SSE event stream. */
  eventLog: (orgId: string) => `ORG#${orgId}#EVENTS`,
  /** The entries logged in one millisecond share this sort-key prefix (epoch ms, zero-padded so text order is time order). */
  eventLogTime: (loggedAt: number) => String(loggedAt).padStart(13, '0'),
  eventLogEntry: (orgId: string, loggedAt: number, eventId: string) => ({
    pk: `ORG#${orgId}#EVENTS`,
    sk: `${String(loggedAt).padStart(13, '0')}#${eventId}`,
  }),
  idempotency: (orgId: string, keyDigest: string) => ({ pk: `ORG#${orgId}#IDEM#${keyDigest}`, sk: '#IDEM' }),
  orgPartition: (orgId: string) => `ORG#${orgId}`,
  sessionPartition: (orgId: string, sessionId: string) => `ORG#${orgId}#SES#${sessionId}`,
  session: (orgId: string, sessionId: string) => ({ pk: `ORG#${orgId}#SES#${sessionId}`, sk: '#SESSION' }),
  sessionsByOrg: (orgId: string) => `ORG#${orgId}#SESSIONS`,
  sessionsByAgent: (orgId: string, agentId: string) => `ORG#${orgId}#AGENT#${agentId}#SESSIONS`,
  /** Sessions while they are OPEN (a sparse index: the end removes the key), newest first like the others. */
  openSessions: (orgId: string) => `ORG#${orgId}#OPENSESSIONS`,
  /** Counts of an organization's sessions by state and platform: for the organization, and for each agent. */
  sessionCounters: (orgId: string) => `ORG#${orgId}#SESSIONCOUNTS`,
  sessionCounter: (orgId: string, scope: 'ORG' | `AGENT#${string}`, shard: number) => ({ pk: `ORG#${orgId}#SESSIONCOUNTS`, sk: `${scope}#${shard}` }),
  sessionExpiry: (orgId: string, sessionId: string) => ({ pk: `ORG#${orgId}#SES#${sessionId}`, sk: '#EXPIRY' }),
  /** Zero-padded so that the sort key orders messages numerically. */
  message: (orgId: string, sessionId: string, seq: number) => ({
    pk: `ORG#${orgId}#SES#${sessionId}`,
    sk: `MSG#${String(seq).padStart(12, '0')}`,
  }),
  messagePrefix: 'MSG#',
  /** One per analysis asked for (the end's, each re-run's); its INSERT on the stream sends it to the analysis queue. */
  analysisJob: (orgId: string, sessionId: string, jobId: string) => ({ pk: `ORG#${orgId}#SES#${sessionId}`, sk: `ANALYSIS#${jobId}` }),
  outbox: (partition: string, eventId: string) => ({ pk: partition, sk: `OUTBOX#${eventId}` }),
  /** Usage counters of an organization, one item per hour, day and month (`HOUR#2026-11-25T11`, `DAY#…`, `MONTH#…`). */
  usagePartition: (orgId: string) => `ORG#${orgId}#USAGE`,
  usageStockChangePrefix,
  usageCounter: (orgId: string, granularity: 'hour' | 'day' | 'month', bucket: string) => ({
    pk: `ORG#${orgId}#USAGE`,
    sk: `${granularity.toUpperCase()}#${bucket}`,
  }),
  /**
   * What an organization holds now (`knowledge_chunks`): a stock, changed by `ADD` in the same transaction as what
   * it counts, unlike the period counters the meter fills (docs/usage-and-billing.md#stocks).
   */
  usageStock: (orgId: string) => ({ pk: `ORG#${orgId}#USAGE`, sk: 'STOCK' }),
  /**
   * One change of a stock, written beside it and kept: its INSERT on the stream tells the meter to roll usage up,
   * and the changes since a time give the stock then (the usage series). Sorted by the time of the change.
   */
  usageStockChange: (orgId: string, at: string, changeId: string) => ({ pk: `ORG#${orgId}#USAGE`, sk: `${usageStockChangePrefix}${at}#${changeId}` }),
  /** What of a session's records the meter has counted: the watermark that makes counting exactly once. */
  usageMeter: (orgId: string, sessionId: string) => ({ pk: `ORG#${orgId}#SES#${sessionId}`, sk: '#METER' }),
  /** When `usage.updated` was last sent for the organization, and what it said. */
  usageRollup: (orgId: string) => ({ pk: `ORG#${orgId}#USAGE`, sk: '#ROLLUP' }),
  /** How far usage was accounted for the billing provider's meters, and the meter report being sent. */
  usageMetering: (orgId: string) => ({ pk: `ORG#${orgId}#USAGE`, sk: '#METERED' }),
  /** A rate-limit bucket: `org` for the organization, `key#<keyId>` for an API key with its own limit. */
  rateLimit: (orgId: string, bucket: string) => ({ pk: `ORG#${orgId}#RL#${bucket}`, sk: '#RL' }),
  /** Analytics aggregates: one item per agent per day and per hour (`DAY#2026-11-25#AGENT#<id>`, `HOUR#2026-11-25T11#AGENT#<id>`). */
  analyticsPartition: (orgId: string) => `ORG#${orgId}#ANALYTICS`,
  analyticsAggregate: (orgId: string, granularity: 'hour' | 'day', bucket: string, agentId: string) => ({
    pk: `ORG#${orgId}#ANALYTICS`,
    sk: `${granularity.toUpperCase()}#${bucket}#AGENT#${agentId}`,
  }),
  subscription: (orgId: string) => ({ pk: `ORG#${orgId}`, sk: 'SUBSCRIPTION' }),
  phoneNumber: (orgId: string, phoneNumberId: string) => ({ pk: `ORG#${orgId}`, sk: `PHONE#${phoneNumberId}` }),
  phoneNumberPrefix: 'PHONE#',
  /** Cross-tenant, like the API-key hash: which organization owns a number (inbound routing, worldwide uniqueness). */
  phoneNumberClaim: (e164: string) => ({ pk: `PHONENUMBER#${e164}`, sk: '#PHONENUMBER' }),
  telephonyCredentials: (orgId: string) => ({ pk: `ORG#${orgId}`, sk: 'TELEPHONY#twilio' }),
  providerKey: (orgId: string, provider: string) => ({ pk: `ORG#${orgId}`, sk: `PROVIDERKEY#${provider}` }),
  providerKeyPrefix: 'PROVIDERKEY#',
  voiceCall: (orgId: string, sessionId: string) => ({ pk: `ORG#${orgId}#SES#${sessionId}`, sk: '#CALL' }),
  /** The plan's concurrent calls as numbered slots, each held by one call (docs/voice.md#call-slots). */
  callSlots: (orgId: string) => `ORG#${orgId}#CALLSLOTS`,
  callSlot: (orgId: string, slot: number) => ({ pk: `ORG#${orgId}#CALLSLOTS`, sk: `SLOT#${String(slot).padStart(4, '0')}` }),
  /** An organization's contacts, one partition of their own (docs/contacts.md#storage). */
  contactsPartition: (orgId: string) => `ORG#${orgId}#CONTACTS`,
  contact: (orgId: string, contactId: string) => ({ pk: `ORG#${orgId}#CONTACTS`, sk: `CONTACT#${contactId}` }),
  contactPrefix: 'CONTACT#',
  /** Which contact holds a number (unique per organization); carries its `doNotCall` for the check at every dial. */
  contactPhone: (orgId: string, e164: string) => ({ pk: `ORG#${orgId}#CONTACTPHONE#${e164}`, sk: '#CONTACTPHONE' }),
  /** The organization's do-not-call list, one item per number, in number order. */
  dncPartition: (orgId: string) => `ORG#${orgId}#DNC`,
  dncEntry: (orgId: string, e164: string) => ({ pk: `ORG#${orgId}#DNC`, sk: e164 }),
  /** Cross-tenant: the call a ConversationRelay WebSocket connection carries (its later messages name only the connection). */
  relayConnection: (connectionId: string) => ({ pk: `VOICECONN#${connectionId}`, sk: '#VOICECONN' }),
  campaign: (orgId: string, campaignId: string) => ({ pk: `ORG#${orgId}`, sk: `CAMPAIGN#${campaignId}` }),
  campaignPrefix: 'CAMPAIGN#',
  /** A campaign's contacts (and its outbox events). */
  campaignPartition: (orgId: string, campaignId: string) => `ORG#${orgId}#CAMPAIGN#${campaignId}`,
  campaignContact: (orgId: string, campaignId: string, contactId: string) => ({ pk: `ORG#${orgId}#CAMPAIGN#${campaignId}`, sk: `CONTACT#${contactId}` }),
  campaignContactPrefix: 'CONTACT#',
  /** gsi1: the campaign's PENDING contacts by next attempt time (a sparse index: the claim removes the key). */
  campaignDue: (orgId: string, campaignId: string) => `ORG#${orgId}#CAMPAIGN#${campaignId}#DUE`,
  /** gsi2: the campaign's contacts IN_PROGRESS by claim time. */
  campaignLive: (orgId: string, campaignId: string) => `ORG#${orgId}#CAMPAIGN#${campaignId}#LIVE`,
  whatsappNumber: (orgId: string, numberId: string) => ({ pk: `ORG#${orgId}`, sk: `WANUMBER#${numberId}` }),
  whatsappNumberPrefix: 'WANUMBER#',
  /** Cross-tenant, like the phone-number claim: which organization owns Meta's phone number id (webhook routing, uniqueness). */
  whatsappNumberClaim: (phoneNumberId: string) => ({ pk: `WAPHONE#${phoneNumberId}`, sk: '#WAPHONE' }),
  /** The session a customer's messages to a number go to, while it is open. */
  whatsappCustomer: (orgId: string, numberId: string, customerKey: string) => ({ pk: `ORG#${orgId}#WANUMBER#${numberId}`, sk: `CUSTOMER#${customerKey}` }),
  /** An inbound message taken (by Meta's id): a redelivery finds it and is not answered again. */
  whatsappInbound: (orgId: string, numberId: string, wamid: string) => ({ pk: `ORG#${orgId}#WANUMBER#${numberId}`, sk: `INBOUND#${wamid}` }),
  /** Which reply an outbound message belongs to, for its status notifications. */
  whatsappOutbound: (orgId: string, numberId: string, wamid: string) => ({ pk: `ORG#${orgId}#WANUMBER#${numberId}`, sk: `OUTBOUND#${wamid}` }),
} as const;
