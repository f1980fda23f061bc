import { createHash, randomBytes } from 'node:crypto';
import { v5 as uuidv5 } from 'uuid';
import type { Config } from '../platform/config.ts';
import {
  AgentInactiveError,
  AgentNotVoiceEnabledError,
  ConcurrentCallsExceededError,
  ForbiddenError,
  InvalidSessionError,
  InvalidSignatureError,
  NotFoundError,
  PhoneNumberNotInAccountError,
  PhoneNumberTakenError,
  SessionCreationError,
  SessionNotFoundError,
  TelephonyNotConfiguredError,
  VoicePipelineModeUnsupportedError,
} from '../platform/errors.ts';
import { logger } from '../platform/logger.ts';
import type { StoredSession } from '../conversations/ports.ts';
import type { CallBackstop, CampaignCallEnded, CampaignCallTag, NumberRouting, RecordingStore, RelayConnections, StoredPhoneNumber, Telephony, TelephonyCredentials, VoiceStore } from './ports.ts';
import type { Agent } from '../agents/agent-schemas.ts';
import { agentOfSessionBinding, boundVersion, publishedAgent } from '../agents/agent-versions.ts';
import type { EndedReason } from '../conversations/session-schemas.ts';
import {
  twilioCallStatuses,
  type AvailablePhoneNumber,
  type BuyPhoneNumberInput,
  type CreatePhoneNumberInput,
  type PhoneNumber,
  type SearchAvailableNumbersInput,
  type StartCallInput,
  type StartVoiceSessionInput,
  type VoiceSessionGrant,
  type TwilioCallStatus,
  type TwilioCredentialsInput,
  type UpdatePhoneNumberInput,
  type VoiceCall,
} from './voice-schemas.ts';
import { mediaStreamTwiml } from './media-streams.ts';
import type { ModelCatalog } from '../models/model-catalog.ts';
import { conversationRelayTwiml, hangupTwiml, rejectTwiml, relayInbound, transferTwiml, whisperTwiml, type RelayOutbound } from './conversation-relay.ts';
import { isValidTwilioSignature } from './twilio-signature.ts';
import { conversationRelayTtsProviders, type TtsProvider } from '../models/voices.ts';
import { assertMayConsume, currentPlan } from '../billing/admission.ts';
import { releaseCallSlot, takeCallSlot, type CallSlotDeps } from './call-slots.ts';
import { newId, nextUpdatedAt } from '../platform/clock.ts';
import { sessionEvents } from '../conversations/session-events.ts';
import { endSession, expiryEpochSeconds, type SessionDeps } from '../conversations/sessions.ts';
import { prepareTurn, runTurn, type TurnDeps, type TurnOptions } from '../conversations/turn.ts';
import { histories, queueTurn } from '../conversations/turn-state.ts';
import { modelOfOrganization } from '../models/provider-keys.ts';
import { transferRecordSchema, type TransferRecord } from '../conversations/routing-tools.ts';

export interface VoiceDeps extends SessionDeps, CallSlotDeps {
  voice: VoiceStore;
  telephony: Telephony;
  recordings: RecordingStore;
  backstop: CallBackstop;
  /** A campaign's call ended: its campaign settles the attempt (docs/campaigns.md#exactly-once). */
  campaignCallEnded: CampaignCallEnded;
  config: SessionDeps['config'] & CallSlotDeps['config'] & Pick<Config, 'PUBLIC_BASE_URL' | 'VOICE_RELAY_URL' | 'MEDIA_WORKER_URL'>;
}

/** What a call's conversation needs, on either path: calls and turns. */
export interface ConversationDeps extends VoiceDeps, TurnDeps {
  config: VoiceDeps['config'] & TurnDeps['config'];
}

export interface RelayDeps extends ConversationDeps {
  relay: RelayConnections;
}

/** Which call: its organization and session. */
export interface CallRef {
  orgId: string;
  sessionId: string;
}

/**
 * Where a reply goes as the turn makes it: ConversationRelay's text tokens, or the media worker's speech. `settled`
 * resolves once what was said is out (the relay) or has been played to the caller (the worker's marks).
 */
export interface ReplyChannel {
  delta(text: string): void;
  /** The reply is whole. */
  complete(): void;
  /** The conversation is over: the agent said goodbye, or transfers (`handoffData`). */
  end(handoffData?: string): void;
  settled(): Promise<void>;
}

/** A key press, as the user message the agent answers (docs/voice.md#call-flow). */
export const keyPressContent = (digit: string): string => `[The caller pressed ${digit}]`;

/** Inbound sessions are named by the carrier's call id, so a retried voice webhook finds the session it created. */
const inboundSessionNamespace = '6f1d3c0e-8a51-4c7e-9f0a-2b7d5e4c1a90';

// ---- Phone numbers -------------------------------------------------------------------------------------------

/**
 * `POST /api/v1/phone-numbers`: a number the organization's Twilio account has is recorded here and routed to us
 * at Twilio (its voice URL and status callback), so that its calls reach its agent with nothing set up by hand. The
 * number is claimed first, so a number another organization has is never re-routed; if Twilio then refuses, the
 * claim is undone.
 */
export async function importPhoneNumber(deps: VoiceDeps, orgId: string, input: CreatePhoneNumberInput): Promise<PhoneNumber> {
  if (input.agentId) await requireAgent(deps, orgId, input.agentId);
  await assertUnclaimed(deps, input.phone_number);
  const credentials = await requireCredentials(deps, orgId);
  const carrierNumber = await deps.telephony.findNumber(credentials, input.phone_number);
  if (!carrierNumber) {
    throw new PhoneNumberNotInAccountError(
      `${input.phone_number} is not a number of Twilio account ${credentials.accountSid}; buy it (POST /api/v1/phone-numbers/buy) or move it there first.`,
    );
  }
  const number = newPhoneNumber(deps, orgId, input, carrierNumber.sid);
  await deps.voice.createPhoneNumber(number);
  try {
    await deps.telephony.routeNumber(credentials, carrierNumber, numberRouting(deps));
  } catch (error) {
    await deps.voice.deletePhoneNumber(orgId, number.id);
    throw error;
  }
  return publicPhoneNumber(number);
}

/** `GET /api/v1/phone-numbers/available`: numbers for sale in the organization's Twilio account, as Twilio finds them. */
export async function searchAvailablePhoneNumbers(deps: VoiceDeps, orgId: string, query: SearchAvailableNumbersInput): Promise<{ items: AvailablePhoneNumber[] }> {
  const credentials = await requireCredentials(deps, orgId);
  const items = await deps.telephony.searchAvailableNumbers(credentials, {
    country: query.country,
    type: query.type,
    areaCode: query.area_code,
    contains: query.contains,
    region: query.region,
    postalCode: query.postal_code,
    locality: query.locality,
    nearNumber: query.near_number,
    distance: query.distance,
    size: query.size,
  });
  return { items };
}

/**
 * `POST /api/v1/phone-numbers/buy`: Twilio buys the number (or one in the area code) for the organization's account,
 * routed to us from the start, and it is recorded here like an imported one. A number that cannot be recorded here
 * is given back at once, so nothing is billed for a number the organization cannot use.
 */
export async function buyPhoneNumber(deps: VoiceDeps, orgId: string, input: BuyPhoneNumberInput): Promise<PhoneNumber> {
  if (input.agentId) await requireAgent(deps, orgId, input.agentId);
  if (input.phone_number) await assertUnclaimed(deps, input.phone_number);
  const credentials = await requireCredentials(deps, orgId);
  const wanted = input.phone_number ? { phoneNumber: input.phone_number } : { areaCode: input.area_code as string };
  const bought = await deps.telephony.buyNumber(credentials, wanted, numberRouting(deps));
  const number = newPhoneNumber(deps, orgId, { ...input, phone_number: bought.phoneNumber, provider: 'twilio' }, bought.sid);
  try {
    await deps.voice.createPhoneNumber(number);
  } catch (error) {
    await deps.telephony.releaseNumber(credentials, bought.sid).catch((releaseError: unknown) => {
      logger.error('bought number neither recorded nor released', { orgId, phoneNumber: bought.phoneNumber, error: releaseError as Error });
    });
    throw error;
  }
  return publicPhoneNumber(number);
}

function newPhoneNumber(deps: VoiceDeps, orgId: string, input: CreatePhoneNumberInput, carrierSid: string): StoredPhoneNumber {
  const now = deps.clock.now().toISOString();
  return {
    id: newId(),
    orgId,
    phone_number: input.phone_number,
    provider: input.provider,
    ...(input.label !== undefined ? { label: input.label } : {}),
    ...(input.agentId ? { agentId: input.agentId } : {}),
    record_inbound_calls: input.record_inbound_calls,
    carrierSid,
    createdAt: now,
    updatedAt: now,
  };
}

/** Fails before anything is asked of the carrier when an organization has the number already (the claim decides). */
async function assertUnclaimed(deps: VoiceDeps, e164: string): Promise<void> {
  if (await deps.voice.phoneNumberOwner(e164)) throw new PhoneNumberTakenError(`${e164} is already imported (numbers belong to one organization).`);
}

/** Where Twilio sends a number's calls: our voice webhook, and the status callback that hears each inbound call's end. */
const numberRouting = (deps: VoiceDeps): NumberRouting => ({ voiceUrl: inboundWebhookUrl(deps), statusCallback: inboundStatusCallbackUrl(deps) });

export async function listPhoneNumbers(deps: VoiceDeps, orgId: string, size: number): Promise<{ items: PhoneNumber[] }> {
  return { items: (await deps.voice.listPhoneNumbers(orgId, size)).map(publicPhoneNumber) };
}

export async function getPhoneNumber(deps: VoiceDeps, orgId: string, phoneNumberId: string): Promise<PhoneNumber> {
  return publicPhoneNumber(await requirePhoneNumber(deps, orgId, phoneNumberId));
}

export async function updatePhoneNumber(deps: VoiceDeps, orgId: string, phoneNumberId: string, input: UpdatePhoneNumberInput): Promise<PhoneNumber> {
  const previous = await requirePhoneNumber(deps, orgId, phoneNumberId);
  if (input.agentId) await requireAgent(deps, orgId, input.agentId);
  const next: StoredPhoneNumber = { ...previous, updatedAt: nextUpdatedAt(deps.clock, previous.updatedAt) };
  if (input.label === null) delete next.label;
  else if (input.label !== undefined) next.label = input.label;
  if (input.agentId === null) delete next.agentId;
  else if (input.agentId !== undefined) next.agentId = input.agentId;
  if (input.record_inbound_calls !== undefined) next.record_inbound_calls = input.record_inbound_calls;
  await deps.voice.replacePhoneNumber(previous, next);
  return publicPhoneNumber(next);
}

/**
 * `DELETE /api/v1/phone-numbers/{id}`: the number leaves the organization. With `release`, it is given back to Twilio
 * first (and stops being billed); if Twilio refuses, the number is kept, so the request can be repeated.
 */
export async function deletePhoneNumber(deps: VoiceDeps, orgId: string, phoneNumberId: string, options: { release: boolean }): Promise<void> {
  if (options.release) {
    const number = await requirePhoneNumber(deps, orgId, phoneNumberId);
    const credentials = await requireCredentials(deps, orgId);
    const sid = number.carrierSid ?? (await deps.telephony.findNumber(credentials, number.phone_number))?.sid;
    if (sid) await deps.telephony.releaseNumber(credentials, sid);
  }
  if (!(await deps.voice.deletePhoneNumber(orgId, phoneNumberId))) throw new NotFoundError(`Phone number ${phoneNumberId} not found.`);
}

async function requirePhoneNumber(deps: VoiceDeps, orgId: string, phoneNumberId: string): Promise<StoredPhoneNumber> {
  const number = await deps.voice.getPhoneNumber(orgId, phoneNumberId);
  if (!number) throw new NotFoundError(`Phone number ${phoneNumberId} not found.`);
  return number;
}

async function requireAgent(deps: VoiceDeps, orgId: string, agentId: string): Promise<Agent> {
  const agent = await deps.agents.get(orgId, agentId);
  if (!agent) throw new NotFoundError(`Agent ${agentId} not found.`);
  return agent;
}

/** The agent as the call's session answers with (the version it is bound to). */
async function sessionAgent(deps: VoiceDeps, session: Pick<StoredSession, 'orgId' | 'agentId' | 'agentVersion'>): Promise<Agent> {
  const agent = await agentOfSessionBinding(deps, session.orgId, session);
  if (!agent) throw new NotFoundError(`Agent ${session.agentId} not found.`);
  return agent;
}

function publicPhoneNumber(number: StoredPhoneNumber): PhoneNumber {
  const { orgId: _orgId, carrierSid: _carrierSid, ...visible } = number;
  return visible;
}

// ---- Carrier credentials -------------------------------------------------------------------------------------

export async function putTwilioCredentials(deps: VoiceDeps, orgId: string, input: TwilioCredentialsInput) {
  const updatedAt = deps.clock.now().toISOString();
  await deps.voice.putCredentials(orgId, input, updatedAt);
  return { provider: 'twilio' as const, accountSid: input.accountSid, updatedAt };
}

/** The account SID and when it was set; the auth token is write-only. */
export async function getTwilioCredentials(deps: VoiceDeps, orgId: string) {
  const stored = await deps.voice.getCredentials(orgId);
  if (!stored) throw new NotFoundError('No Twilio credentials are set; PUT /v1/chat/telephony/twilio.');
  return { provider: 'twilio' as const, accountSid: stored.accountSid, updatedAt: stored.updatedAt };
}

export async function deleteTwilioCredentials(deps: VoiceDeps, orgId: string): Promise<void> {
  if (!(await deps.voice.deleteCredentials(orgId))) throw new NotFoundError('No Twilio credentials are set.');
}

async function requireCredentials(deps: VoiceDeps, orgId: string): Promise<TelephonyCredentials> {
  const credentials = await deps.voice.getCredentials(orgId);
  if (!credentials) throw new TelephonyNotConfiguredError('Set the organization\'s Twilio credentials first: PUT /v1/chat/telephony/twilio.');
  return credentials;
}

// ---- Addresses the carrier calls (signed over exactly these) ---------------------------------------------------

/**
 * A carrier's callback reaches a deployment that gave no carrier an address to call back (no PUBLIC_BASE_URL): no
 * call of it can be behind the request, which is answered 404 like any address that names nothing here.
 */
function requireCarrierCallbacks(deps: VoiceDeps): void {
  if (!deps.config.PUBLIC_BASE_URL) throw new NotFoundError('This deployment takes no carrier callbacks: PUBLIC_BASE_URL is not set.');
}

function publicBase(deps: VoiceDeps): string {
  if (!deps.config.PUBLIC_BASE_URL) throw new Error('PUBLIC_BASE_URL is not set: the carrier cannot call this deployment back.');
  return deps.config.PUBLIC_BASE_URL.replace(/\/$/, '');
}

export const statusCallbackUrl = (deps: VoiceDeps, orgId: string, sessionId: string): string =>
  `${publicBase(deps)}/twilio/calls/${orgId}/${sessionId}/status`;

export const relayEndedUrl = (deps: VoiceDeps, orgId: string, sessionId: string): string =>
  `${publicBase(deps)}/twilio/calls/${orgId}/${sessionId}/relay-ended`;

/** Where the destination of a warm transfer gets its whisper (`<Number url>`). */
export const whisperUrl = (deps: VoiceDeps, orgId: string, sessionId: string): string =>
  `${publicBase(deps)}/twilio/calls/${orgId}/${sessionId}/whisper`;

export const recordingCallbackUrl = (deps: VoiceDeps, orgId: string, sessionId: string): string =>
  `${publicBase(deps)}/twilio/calls/${orgId}/${sessionId}/recording`;

/** The session's `recordingUrl`: our own, authenticated address, never the carrier's. */
export const recordingUrl = (deps: VoiceDeps, sessionId: string): string => `${publicBase(deps)}/v1/chat/sessions/${sessionId}/recording`;

export const inboundWebhookUrl = (deps: VoiceDeps): string => `${publicBase(deps)}/twilio/voice`;

/** A number's status callback: Twilio tells the end of each inbound call to it here. */
export const inboundStatusCallbackUrl = (deps: VoiceDeps): string => `${publicBase(deps)}/twilio/voice/status`;

/**
 * Where ConversationRelay connects for one call: the query names the call and carries its single-use relay token;
 * the signature covers it all.
 */
export function relayUrl(deps: VoiceDeps, orgId: string, sessionId: string, relayToken: string): string {
  if (!deps.config.VOICE_RELAY_URL) throw new Error('VOICE_RELAY_URL is not set: calls have no WebSocket API to talk to.');
  return `${deps.config.VOICE_RELAY_URL}?org=${encodeURIComponent(orgId)}&session=${encodeURIComponent(sessionId)}&token=${encodeURIComponent(relayToken)}`;
}

/**
 * Where the media worker takes one call's Media Stream. Twilio's `<Stream url>` takes no query string: the path names
 * the call, so that the upgrade's signature is checked with its organization's token before any audio, and the
 * single-use token travels as a `<Parameter>` (`start.customParameters`).
 */
export function mediaStreamUrl(deps: VoiceDeps, orgId: string, sessionId: string): string {
  if (!deps.config.MEDIA_WORKER_URL) throw new Error('MEDIA_WORKER_URL is not set: calls of this agent have no media worker to talk to.');
  return `${deps.config.MEDIA_WORKER_URL.replace(/\/$/, '')}/${encodeURIComponent(orgId)}/${encodeURIComponent(sessionId)}`;
}

/** The `<Parameter>` of a stream's single-use token. */
export const streamTokenParameter = 'token';

/** The call keeps only a hash of its relay token: the token itself is in the TwiML the carrier got, and nowhere else. */
const relayTokenHash = (relayToken: string): string => createHash('sha256').update(relayToken).digest('base64url');

/** ConversationRelay's spelling of each TTS provider of the voices catalog it speaks with (not the built-in one). */
const relayTtsProviders: Partial<Record<TtsProvider, string>> = { google: 'Google', amazon: 'Amazon', elevenlabs: 'ElevenLabs', cartesia: 'Cartesia', rime: 'Rime' };

/** The two ways a call's audio goes (docs/voice.md#which-path-a-call-takes, decision 437). */
export type CallPath = 'conversation-relay' | 'media-worker';

const relayVoiceProviders: ReadonlySet<string> = new Set(conversationRelayTtsProviders);
/** The STT provider ConversationRelay runs itself (its `transcriptionProvider`). */
const relaySttProviders: ReadonlySet<string> = new Set(['deepgram']);

/**
 * ConversationRelay when it does all the agent asks for itself (it is serverless, and Twilio bills the speech); the
 * media worker for anything else: a voice or model of another provider (the built-in engines, Cartesia, Rime,
 * Amazon Transcribe), or an explicit end of turn. A model the catalog does not know asks for nothing.
 */
export function callPathOf(agent: Pick<Agent, 'voice' | 'sttModelId' | 'ttsModelId' | 'voicePipelineMode'>, catalog: Pick<ModelCatalog, 'byId'>): CallPath {
  // A speech-to-speech model's audio stream is the worker's to bridge.
  if (agent.voicePipelineMode === 'sts' || agent.voicePipelineMode === 'hybrid') return 'media-worker';
  const voiceProvider = agent.voice?.provider;
  const stt = agent.sttModelId ? catalog.byId(agent.sttModelId) : undefined;
  const tts = agent.ttsModelId ? catalog.byId(agent.ttsModelId) : undefined;
  const relayDoesIt =
    !agent.voice?.endOfTurn &&
    (voiceProvider === undefined || relayVoiceProviders.has(voiceProvider)) &&
    (!stt || relaySttProviders.has(stt.provider)) &&
    (!tts || (relayVoiceProviders.has(tts.provider) && (voiceProvider === undefined || (tts.provider as string) === voiceProvider)));
  return relayDoesIt ? 'conversation-relay' : 'media-worker';
}

/**
 * The call's TwiML, with a fresh single-use token the call keeps (hashed) for the one connection it admits:
 * ConversationRelay's `$connect`, or the media worker's stream `start`. `record` starts a recording in the TwiML
 * itself (an inbound call; an outbound one is recorded by its REST request).
 */
async function twimlFor(deps: VoiceDeps, agent: Agent, orgId: string, sessionId: string, options: { record?: boolean } = {}): Promise<string> {
  const relayToken = randomBytes(24).toString('base64url');
  await deps.voice.offerRelay(orgId, sessionId, relayTokenHash(relayToken));
  const recordingStatusCallback = options.record ? recordingCallbackUrl(deps, orgId, sessionId) : undefined;
  // When the conversation ends with the call still up (the agent said goodbye or transfers, the connection dropped),
  // Twilio asks this action what to do next, and we answer <Hangup/>, or <Dial> for a transfer.
  const action = relayEndedUrl(deps, orgId, sessionId);
  if (callPathOf(agent, deps.catalog) === 'media-worker') {
    return mediaStreamTwiml({ url: mediaStreamUrl(deps, orgId, sessionId), parameters: { [streamTokenParameter]: relayToken }, action, recordingStatusCallback });
  }
  const twiml = conversationRelayTwiml({
    recordingStatusCallback,
    url: relayUrl(deps, orgId, sessionId, relayToken),
    language: agent.language ?? 'en-US',
    interruptible: true,
    welcomeGreetingInterruptible: agent.welcomeAllowInterruptions ?? true,
    // A key press is a user message the agent answers (docs/voice.md#call-flow); Twilio sends none unless asked.
    dtmfDetection: true,
    welcomeGreeting: agent.voice?.welcomeMessage || undefined,
    ttsProvider: agent.voice ? relayTtsProviders[agent.voice.provider] : undefined,
    voice: agent.voice?.voiceId,
  });
  return twiml.replace('<Connect>', `<Connect action="${action}">`);
}

// ---- Starting calls ------------------------------------------------------------------------------------------

/**
 * The agent may take calls: voice-enabled, active, its model known, and in a voice mode this deployment runs (`sts`
 * and `hybrid` need a speech-to-speech model, the agent's `stsModelId` or the deployment's first).
 */
async function callableAgent(deps: VoiceDeps, orgId: string, agentId: string): Promise<Agent> {
  // A call (a campaign's dial included) opens with the agent's published version, which a MANUAL agent's call keeps.
  const agent = await publishedAgent(deps, orgId, agentId);
  if (!agent) throw new NotFoundError(`Agent ${agentId} not found.`);
  if (!agent.voiceEnabled) throw new AgentNotVoiceEnabledError(`Agent ${agent.id} is not voice-enabled; set voiceEnabled and voicePipelineMode.`);
  if ((agent.voicePipelineMode === 'sts' || agent.voicePipelineMode === 'hybrid') && !agent.stsModelId && !deps.catalog.models.some((model) => model.type === 'STS')) {
    throw new VoicePipelineModeUnsupportedError(
      `Agent ${agent.id} uses voicePipelineMode "${agent.voicePipelineMode}", and this deployment has no speech-to-speech model; set stsModelId, or use "pipeline".`,
    );
  }
  if (!agent.isActive) throw new AgentInactiveError(`Agent ${agent.id} is inactive; activate it to take calls.`);
  if (!(await modelOfOrganization(deps, orgId, agent.modelId))) throw new SessionCreationError(`The agent's model ${agent.modelId} is not available in this deployment.`);
  return agent;
}

function newCallSession(deps: VoiceDeps, orgId: string, agent: Agent, call: { direction: 'INBOUND' | 'OUTBOUND'; id: string; customer: string; roomName: string; sessionVariables: Record<string, unknown> }): StoredSession {
  const now = deps.clock.now().toISOString();
  return {
    id: call.id,
    orgId,
    agentId: agent.id,
    ...boundVersion(agent),
    type: 'VOICE',
    direction: call.direction,
    platform: 'PHONE',
    state: 'OPEN',
    metadata: { customerPhoneNumber: call.customer, roomName: call.roomName, sessionVariables: call.sessionVariables },
    createdAt: now,
    updatedAt: now,
    lastActivityAt: now,
    messageCount: 0,
    nextSeq: 1,
  };
}

/** What an outbound call is placed with: the number it comes from, the agent that talks, the carrier's credentials. */
export interface CallLine {
  number: StoredPhoneNumber;
  agent: Agent;
  credentials: TelephonyCredentials;
}

/** The number, a callable agent and the carrier credentials, or the error that says which is missing. */
export async function callLine(deps: VoiceDeps, orgId: string, phoneNumberId: string, agentId: string): Promise<CallLine> {
  const number = await requirePhoneNumber(deps, orgId, phoneNumberId);
  const agent = await callableAgent(deps, orgId, agentId);
  const credentials = await requireCredentials(deps, orgId);
  return { number, agent, credentials };
}

/** An outbound call to place: its session's id is chosen by the caller (a campaign derives it from its attempt). */
export interface OutboundCall {
  sessionId: string;
  to: string;
  ttl: number;
  sessionVariables: Record<string, unknown>;
  /** A campaign's dial: which campaign, contact and attempt (the session's `metadata.campaign`). */
  campaign?: CampaignCallTag;
}

/**
 * `POST /api/v1/phone-numbers/{id}/calls/start`: refused while the subscription is inactive or its voice seconds
 * are used up, and unless the call takes one of the plan's call slots (docs/usage-and-billing.md#enforcement),
 * which it holds until it ends.
 */
export async function startOutboundCall(deps: VoiceDeps, orgId: string, phoneNumberId: string, input: StartCallInput): Promise<{ sessionId: string }> {
  const [line] = await Promise.all([callLine(deps, orgId, phoneNumberId, input.agent_id), assertMayConsume(deps, orgId, 'voice_seconds')]);
  const sessionId = newId();
  if ((await takeCallSlot(deps, orgId, sessionId, longestOutboundCallSeconds(deps, input.ttl))) === 'full') {
    const { concurrentCalls } = await currentPlan(deps, orgId);
    throw new ConcurrentCallsExceededError(`The plan allows ${concurrentCalls} concurrent calls and they are all in progress; retry when one ends.`, callSlotRetryAfterSeconds);
  }
  try {
    return await placeOutboundCall(deps, orgId, line, { sessionId, to: input.to_phone_number, ttl: input.ttl, sessionVariables: input.session_variables });
  } catch (error) {
    // No call came of it (or it ended FAILED, which freed the slot already).
    await releaseCallSlot(deps, orgId, sessionId);
    throw error;
  }
}

/** Seconds a caller refused for the plan's concurrent calls is told to wait: about a short call's length. */
const callSlotRetryAfterSeconds = 30;

/** An outbound call lasts at most its ring and its time limit: the carrier ends it then. */
export const longestOutboundCallSeconds = (deps: Pick<VoiceDeps, 'config'>, ttl: number): number => deps.config.CALL_RING_TIMEOUT_SECONDS + ttl;

/**
 * Every outbound call, `calls/start`'s and campaigns': the session is written first (so that the carrier's first
 * callback finds it), then the carrier creates the call, then `session.created` is recorded with the carrier's
 * call id as `roomName`: all before the callee can pick up. A call the carrier refuses is a `FAILED` session.
 */
export async function placeOutboundCall(deps: VoiceDeps, orgId: string, line: CallLine, outbound: OutboundCall): Promise<{ sessionId: string }> {
  const { number, agent, credentials } = line;
  const session = newCallSession(deps, orgId, agent, {
    direction: 'OUTBOUND',
    id: outbound.sessionId,
    customer: outbound.to,
    roomName: '',
    sessionVariables: outbound.sessionVariables,
  });
  if (outbound.campaign) session.metadata.campaign = outbound.campaign;
  // The URL is known before the recording exists; it answers 404 until the carrier's recording is copied.
  session.recordingUrl = recordingUrl(deps, session.id);
  const call: VoiceCall = {
    orgId,
    sessionId: session.id,
    phoneNumberId: number.id,
    provider: 'twilio',
    direction: 'OUTBOUND',
    from: number.phone_number,
    to: outbound.to,
    ttl: outbound.ttl,
    status: 'queued',
    startedAt: session.createdAt,
  };
  // A session of this id exists already: its call was placed (or is being placed) by whoever wrote it; never twice.
  if (!(await deps.voice.createCall(session, expiryEpochSeconds(deps, Date.parse(session.createdAt)), call, []))) return { sessionId: session.id };
  let callSid: string;
  try {
    ({ callSid } = await deps.telephony.createCall(credentials, {
      from: number.phone_number,
      to: outbound.to,
      twiml: await twimlFor(deps, agent, orgId, session.id),
      statusCallback: statusCallbackUrl(deps, orgId, session.id),
      timeLimitSeconds: outbound.ttl,
      ringTimeoutSeconds: deps.config.CALL_RING_TIMEOUT_SECONDS,
      recordingStatusCallback: recordingCallbackUrl(deps, orgId, session.id),
    }));
  } catch (error) {
    await deps.voice.recordCarrierCall(session, undefined, sessionEvents.sessionCreated(session));
    await endCall(deps, orgId, session.id, 'FAILED');
    throw error;
  }
  const announced = { ...session, metadata: { ...session.metadata, roomName: callSid } };
  await deps.voice.recordCarrierCall(announced, callSid, sessionEvents.sessionCreated(announced));
  await scheduleBackstop(deps, orgId, session.id, longestOutboundCallSeconds(deps, outbound.ttl));
  return { sessionId: session.id };
}

// ---- Voice sessions from the browser (docs/voice.md#voice-sessions-from-the-browser) ----------------------------

/** The media worker's path of browsers' voice sessions: `/voice-session/{orgId}/{sessionId}`. */
export const voiceSessionPath = '/voice-session';

/** How long a voice session's token may wait for its connection. */
export const voiceSessionConnectSeconds = 60;

/** Where a browser connects for one voice session: the media worker's host, a path of its own naming the session. */
export function voiceSessionUrl(deps: VoiceDeps, orgId: string, sessionId: string): string {
  if (!deps.config.MEDIA_WORKER_URL) throw new Error('MEDIA_WORKER_URL is not set: voice sessions have no media worker to talk to.');
  const url = new URL(deps.config.MEDIA_WORKER_URL);
  url.pathname = `${voiceSessionPath}/${encodeURIComponent(orgId)}/${encodeURIComponent(sessionId)}`;
  return url.toString();
}

/**
 * `POST /v1/chat/voice/sessions`: a `VOICE` session on platform `WEB`, admitted as a call start is (a callable agent,
 * the voice seconds quota, one of the plan's call slots until it ends), and a single-use token, kept hashed on its
 * call item as a call's stream token is, that opens the session's WebSocket on the media worker once, within
 * `voiceSessionConnectSeconds`. The backstop ends it if the worker never does.
 */
export async function startVoiceSession(deps: VoiceDeps, orgId: string, input: StartVoiceSessionInput): Promise<VoiceSessionGrant> {
  const [agent] = await Promise.all([callableAgent(deps, orgId, input.agentId), assertMayConsume(deps, orgId, 'voice_seconds')]);
  const sessionId = newId();
  const longestSeconds = voiceSessionConnectSeconds + input.ttl;
  if ((await takeCallSlot(deps, orgId, sessionId, longestSeconds)) === 'full') {
    const { concurrentCalls } = await currentPlan(deps, orgId);
    throw new ConcurrentCallsExceededError(`The plan allows ${concurrentCalls} concurrent calls and they are all in progress; retry when one ends.`, callSlotRetryAfterSeconds);
  }
  try {
    const session: StoredSession = {
      ...newCallSession(deps, orgId, agent, { direction: 'INBOUND', id: sessionId, customer: '', roomName: sessionId, sessionVariables: input.sessionVariables }),
      platform: 'WEB',
    };
    const call: VoiceCall = { orgId, sessionId, phoneNumberId: '', provider: 'web', direction: 'INBOUND', from: 'web', to: agent.id, ttl: input.ttl, status: 'in-progress', startedAt: session.createdAt };
    await deps.voice.createCall(session, expiryEpochSeconds(deps, Date.parse(session.createdAt)), call, [sessionEvents.sessionCreated(session)]);
    const token = randomBytes(24).toString('base64url');
    await deps.voice.offerRelay(orgId, sessionId, relayTokenHash(token));
    await scheduleBackstop(deps, orgId, sessionId, longestSeconds);
    const expiresAt = new Date(Date.parse(session.createdAt) + voiceSessionConnectSeconds * 1000).toISOString();
    return { sessionId, url: voiceSessionUrl(deps, orgId, sessionId), token, expiresAt };
  } catch (error) {
    await releaseCallSlot(deps, orgId, sessionId);
    throw error;
  }
}

/**
 * A browser's connection to its voice session: the token is consumed in the same conditional write as a call's
 * stream token (decision 461), so it opens one connection, once; a token past its `expiresAt` opens none. The org
 * and session are the URL's: another organization's token matches no hash there. The agent, and the session's `ttl`.
 */
export async function claimVoiceSession(deps: VoiceDeps, call: CallRef, connectionId: string, token: string): Promise<{ agent: Agent; ttl: number }> {
  const voiceCall = await deps.voice.getCall(call.orgId, call.sessionId);
  if (voiceCall?.provider !== 'web') throw new NotFoundError(`No voice session ${call.sessionId}.`);
  if (deps.clock.now().getTime() > Date.parse(voiceCall.startedAt) + voiceSessionConnectSeconds * 1000) throw new ForbiddenError('This voice session’s token has expired.');
  const session = await claimCall(deps, connectionId, call, token);
  return { agent: await sessionAgent(deps, session), ttl: voiceCall.ttl };
}

// ---- The carrier's callbacks ---------------------------------------------------------------------------------

export type CarrierParams = Readonly<Record<string, string>>;

/** What a carrier request's signature is checked against besides its form: the header, and the query of the URL requested. */
export interface CarrierSignature {
  signature: string | undefined;
  /** The query string as sent, without `?`: Twilio signs the whole URL it requests, so an appended query must fail. */
  query: string;
}

/** Checks the signature over `url` (ours, without a query) followed by the query the request came with. */
async function verifiedCredentials(deps: VoiceDeps, orgId: string, url: string, params: CarrierParams, signed: CarrierSignature): Promise<TelephonyCredentials> {
  const credentials = await deps.voice.getCredentials(orgId);
  const requested = signed.query ? `${url}?${signed.query}` : url;
  if (!credentials || !isValidTwilioSignature(credentials.authToken, signed.signature, requested, params)) {
    throw new InvalidSignatureError('The X-Twilio-Signature does not match this request.');
  }
  return credentials;
}

const finalStatuses: ReadonlySet<TwilioCallStatus> = new Set(['completed', 'busy', 'no-answer', 'failed', 'canceled']);

function isCallStatus(value: string | undefined): value is TwilioCallStatus {
  return (twilioCallStatuses as readonly string[]).includes(value ?? '');
}

/**
 * A status callback (Twilio retries them, and they may arrive out of order): the call's status only moves
 * forward, and a final status ends the session once, whichever of its copies arrives first.
 */
export async function handleStatusCallback(deps: VoiceDeps, orgId: string, sessionId: string, params: CarrierParams, signed: CarrierSignature): Promise<void> {
  requireCarrierCallbacks(deps);
  await verifiedCredentials(deps, orgId, statusCallbackUrl(deps, orgId, sessionId), params, signed);
  const call = await deps.voice.getCall(orgId, sessionId);
  if (!call) throw new NotFoundError(`No call for session ${sessionId}.`);
  await applyCallStatus(deps, call, params);
}

/**
 * The status callback of an imported or bought number: Twilio tells it the end of each inbound call. The session is
 * found by the call id (decision 128); a call that was rejected has none, and there is nothing to do.
 */
export async function handleInboundStatusCallback(deps: VoiceDeps, params: CarrierParams, signed: CarrierSignature): Promise<void> {
  const owner = params.To ? await deps.voice.phoneNumberOwner(params.To) : undefined;
  if (!owner) throw new NotFoundError('No organization has imported this number.');
  requireCarrierCallbacks(deps);
  await verifiedCredentials(deps, owner.orgId, inboundStatusCallbackUrl(deps), params, signed);
  const call = params.CallSid ? await deps.voice.getCall(owner.orgId, inboundSessionId(owner.orgId, params.CallSid)) : undefined;
  if (call?.direction === 'INBOUND') await applyCallStatus(deps, call, params);
}

async function applyCallStatus(deps: VoiceDeps, call: VoiceCall, params: CarrierParams): Promise<void> {
  const { orgId, sessionId } = call;
  const status = params.CallStatus;
  if (!isCallStatus(status)) return;
  const now = deps.clock.now().toISOString();
  await deps.voice.advanceCall(orgId, sessionId, status, status === 'in-progress' ? { answeredAt: now } : {});
  if (finalStatuses.has(status)) await endCall(deps, orgId, sessionId, endedReasonOf(status, call, params));
}

function endedReasonOf(status: TwilioCallStatus, call: VoiceCall, params: CarrierParams): EndedReason {
  switch (status) {
    case 'busy':
      return 'BUSY';
    case 'no-answer':
      return 'NO_ANSWER';
    case 'failed':
      return 'FAILED';
    case 'canceled':
      return 'CANCELED';
    default:
      if (call.agentHangupAt) return 'HANGUP_AGENT';
      // The carrier ends an outbound call itself at TimeLimit = ttl; its duration says so. Inbound calls have no ttl.
      return call.ttl > 0 && Number(params.CallDuration ?? 0) >= call.ttl ? 'TTL' : 'HANGUP_CALLEE';
  }
}

/**
 * The relay ended (the `<Connect>` action). When it ended with a transfer's `handoffData` and the caller is still
 * on the line, the session ends as TRANSFERRED and the answer dials the destination the agent chose. Otherwise,
 * with the call still up, the agent said goodbye or the connection dropped: the session ends now and the carrier
 * is told to hang up. A completed call is the status callback's to report for an outbound call; an inbound call
 * has no status callback, so its end is read here.
 */
export async function handleRelayEnded(deps: VoiceDeps, orgId: string, sessionId: string, params: CarrierParams, signed: CarrierSignature): Promise<string> {
  requireCarrierCallbacks(deps);
  await verifiedCredentials(deps, orgId, relayEndedUrl(deps, orgId, sessionId), params, signed);
  const call = await deps.voice.getCall(orgId, sessionId);
  if (!call) throw new NotFoundError(`No call for session ${sessionId}.`);
  if (params.CallStatus === 'in-progress') {
    // A Media Stream carries no `handoffData`: the transfer the agent asked for is the session's.
    const transfer = params.HandoffData === undefined || isTransferHandoff(params.HandoffData) ? await requestedTransfer(deps, orgId, sessionId) : undefined;
    if (transfer) {
      await endCall(deps, orgId, sessionId, 'TRANSFERRED');
      const warm = transfer.mode === 'warm';
      return transferTwiml({
        number: transfer.number,
        // The call's own number of the organization: the one the carrier lets it show.
        callerId: call.direction === 'OUTBOUND' ? call.from : call.to,
        whisperUrl: warm ? whisperUrl(deps, orgId, sessionId) : undefined,
        holdMessage: warm ? 'Please hold while I transfer your call.' : undefined,
      });
    }
    await endCall(deps, orgId, sessionId, call.agentHangupAt ? 'HANGUP_AGENT' : 'CONNECTION_LOST');
  } else if (call.direction === 'INBOUND' && isCallStatus(params.CallStatus) && finalStatuses.has(params.CallStatus)) {
    await endCall(deps, orgId, sessionId, endedReasonOf(params.CallStatus, call, params));
  }
  return hangupTwiml;
}

function isTransferHandoff(handoffData: string | undefined): boolean {
  try {
    const parsed: unknown = JSON.parse(handoffData ?? '');
    return typeof parsed === 'object' && parsed !== null && (parsed as { reasonCode?: unknown }).reasonCode === transferReasonCode;
  } catch {
    return false;
  }
}

/** The transfer the session's agent asked for (its `metadata.transfer`), unless the session ended otherwise. */
async function requestedTransfer(deps: VoiceDeps, orgId: string, sessionId: string): Promise<TransferRecord | undefined> {
  const session = await deps.sessions.get(orgId, sessionId);
  if (!session || (session.endedReason && session.endedReason !== 'TRANSFERRED')) return undefined;
  const transfer = transferRecordSchema.safeParse(session.metadata.transfer);
  return transfer.success ? transfer.data : undefined;
}

/** What of the caller's words a whisper quotes: `<Say>` takes at most 4,096 characters. */
const whisperQuoteChars = 500;

/**
 * The whisper of a warm transfer (`<Number url>`): the person who answers hears who calls and why before being
 * connected: the summary the agent gave, or else what the caller said last.
 */
export async function handleWhisper(deps: VoiceDeps, orgId: string, sessionId: string, params: CarrierParams, signed: CarrierSignature): Promise<string> {
  requireCarrierCallbacks(deps);
  await verifiedCredentials(deps, orgId, whisperUrl(deps, orgId, sessionId), params, signed);
  const session = await deps.sessions.get(orgId, sessionId);
  const transfer = transferRecordSchema.safeParse(session?.metadata.transfer);
  if (!session || !transfer.success) throw new NotFoundError(`Session ${sessionId} has no transfer.`);
  const { reason, summary } = transfer.data;
  const said = summary ? undefined : (await deps.sessions.messages(orgId, sessionId)).findLast((message) => message.role === 'USER')?.content.slice(0, whisperQuoteChars);
  const caller = typeof session.metadata.customerPhoneNumber === 'string' && session.metadata.customerPhoneNumber ? ` from ${session.metadata.customerPhoneNumber}` : '';
  const parts = [`Transferred call${caller}.`, reason && `Reason: ${reason}.`, summary ? `Summary: ${summary}` : said && `The caller said: ${said}`];
  return whisperTwiml(parts.filter(Boolean).join(' '));
}

/**
 * Twilio's voice webhook for an imported number: the number's inbound agent answers with the same TwiML as an
 * outbound call, which also starts a recording when the number records inbound calls. The session is named by the
 * call id, so Twilio's retries of this request find it.
 */
export async function handleInboundCall(deps: VoiceDeps, params: CarrierParams, signed: CarrierSignature): Promise<string> {
  const owner = params.To ? await deps.voice.phoneNumberOwner(params.To) : undefined;
  if (!owner) throw new NotFoundError('No organization has imported this number.');
  requireCarrierCallbacks(deps);
  await verifiedCredentials(deps, owner.orgId, inboundWebhookUrl(deps), params, signed);
  const number = await deps.voice.getPhoneNumber(owner.orgId, owner.phoneNumberId);
  const callSid = params.CallSid;
  if (!number?.agentId || !callSid) return rejectTwiml();
  const record = number.record_inbound_calls;
  let agent: Agent;
  try {
    agent = await callableAgent(deps, owner.orgId, number.agentId);
  } catch (error) {
    logger.warn('inbound call refused', { orgId: owner.orgId, phoneNumberId: number.id, reason: (error as Error).message });
    return rejectTwiml();
  }
  const session = newCallSession(deps, owner.orgId, agent, {
    direction: 'INBOUND',
    id: inboundSessionId(owner.orgId, callSid),
    customer: params.From ?? '',
    roomName: callSid,
    sessionVariables: {},
  });
  if (record) session.recordingUrl = recordingUrl(deps, session.id);
  const call: VoiceCall = {
    orgId: owner.orgId,
    sessionId: session.id,
    phoneNumberId: number.id,
    provider: 'twilio',
    direction: 'INBOUND',
    from: params.From ?? '',
    to: number.phone_number,
    ttl: 0,
    callSid,
    status: 'in-progress',
    startedAt: session.createdAt,
    answeredAt: session.createdAt,
  };
  if (await deps.voice.createCall(session, expiryEpochSeconds(deps, Date.parse(session.createdAt)), call, [sessionEvents.sessionCreated(session)])) {
    await Promise.all([scheduleBackstop(deps, owner.orgId, session.id, inboundCallLimitSeconds), holdSlotForInboundCall(deps, owner.orgId, session.id)]);
  }
  return twimlFor(deps, agent, owner.orgId, session.id, { record });
}

const inboundSessionId = (orgId: string, callSid: string): string => uuidv5(`${orgId}/${callSid}`, inboundSessionNamespace);

/**
 * The carrier's recording is ready: copied into our bucket, noted on the call, then deleted at the carrier.
 * Idempotent: a retried callback copies it again (same key) and deletes again (already gone is fine).
 */
export async function handleRecordingCallback(deps: VoiceDeps, orgId: string, sessionId: string, params: CarrierParams, signed: CarrierSignature): Promise<void> {
  requireCarrierCallbacks(deps);
  const credentials = await verifiedCredentials(deps, orgId, recordingCallbackUrl(deps, orgId, sessionId), params, signed);
  const recordingSid = params.RecordingSid;
  if (params.RecordingStatus !== 'completed' || !recordingSid || !/^RE[0-9a-f]{32}$/.test(recordingSid)) return;
  if (!(await deps.voice.getCall(orgId, sessionId))) throw new NotFoundError(`No call for session ${sessionId}.`);
  const audio = await deps.telephony.fetchRecording(credentials, recordingSid);
  const recordingKey = `${orgId}/${sessionId}/${recordingSid}.mp3`;
  await deps.recordings.put(recordingKey, audio.body, audio.contentType);
  await deps.voice.recordRecording(orgId, sessionId, { recordingKey, recordingSid });
  await deps.telephony.deleteRecording(credentials, recordingSid);
}

/** How long a recording's signed URL lasts: enough to start playing it, too short to share it around. */
const recordingLinkSeconds = 300;

/** `GET /v1/chat/sessions/{id}/recording`: a short-lived signed URL of the copy in our bucket. */
export async function recordingLink(deps: VoiceDeps, orgId: string, sessionId: string): Promise<string> {
  const session = await deps.sessions.get(orgId, sessionId);
  if (!session) throw new SessionNotFoundError(`Session ${sessionId} not found.`);
  const call = session.type === 'VOICE' ? await deps.voice.getCall(orgId, sessionId) : undefined;
  if (!call?.recordingKey) throw new NotFoundError(`Session ${sessionId} has no recording (yet).`);
  return deps.recordings.signedUrl(call.recordingKey, recordingLinkSeconds);
}

/** An inbound call has no ttl; API Gateway ends its WebSocket, and so its conversation, after two hours. */
const inboundCallLimitSeconds = 2 * 60 * 60;

/**
 * An inbound call is answered whatever the plan (the carrier has rung us already), but takes a free call slot
 * when there is one, so that calls started meanwhile count it; without a slot it is not refused, only not counted.
 */
async function holdSlotForInboundCall(deps: VoiceDeps, orgId: string, sessionId: string): Promise<void> {
  try {
    await takeCallSlot(deps, orgId, sessionId, inboundCallLimitSeconds);
  } catch (error) {
    logger.error('inbound call holds no call slot', { orgId, sessionId, error: error as Error });
  }
}

/**
 * The backstop: at the call's longest possible end plus a grace, a one-time schedule ends the session if the
 * carrier never said the call was over. A failure to schedule does not fail the call (the carrier's report
 * normally ends it); it is logged as an error.
 */
async function scheduleBackstop(deps: VoiceDeps, orgId: string, sessionId: string, longestSeconds: number): Promise<void> {
  const at = new Date(deps.clock.now().getTime() + (longestSeconds + deps.config.CALL_BACKSTOP_GRACE_SECONDS) * 1000);
  try {
    await deps.backstop.schedule({ orgId, sessionId }, at);
  } catch (error) {
    logger.error('call backstop not scheduled', { orgId, sessionId, error: error as Error });
  }
}

/** The backstop fired: a call still open is ended (`CARRIER_SILENT`) and hung up at the carrier in case it is still up. */
export async function endSilentCall(deps: VoiceDeps, orgId: string, sessionId: string): Promise<boolean> {
  const ended = await endCall(deps, orgId, sessionId, 'CARRIER_SILENT');
  if (ended) await hangUp(deps, { orgId, sessionId });
  return ended;
}

/**
 * Ends a call's session once, whatever reports the end first; false when it had ended already. The end of a call
 * frees its call slot and settles a campaign's attempt; a repeated report does both again (once only), in case
 * the first failed after the session ended, or the session was closed or expired while the call went on.
 */
export async function endCall(deps: VoiceDeps, orgId: string, sessionId: string, reason: EndedReason): Promise<boolean> {
  const session = await deps.sessions.get(orgId, sessionId);
  if (!session) return false;
  if (session.state !== 'OPEN') {
    await afterCallEnded(deps, session);
    return false;
  }
  const endedAt = deps.clock.now().toISOString();
  const ended = await endSession(deps, session, 'CLOSED', reason, endedAt);
  if (!ended) return false;
  await afterCallEnded(deps, ended);
  return true;
}

/** What follows the end of a call, each idempotent: its slot is freed and a campaign's attempt settled. */
export async function afterCallEnded(deps: VoiceDeps, session: StoredSession): Promise<void> {
  const campaign = campaignTagOf(session.metadata);
  await Promise.all([
    releaseCallSlot(deps, session.orgId, session.id),
    campaign && deps.campaignCallEnded({ orgId: session.orgId, campaign, endedReason: session.endedReason, at: deps.clock.now() }),
  ]);
}

/** The campaign dial a session was placed for (`placeOutboundCall` wrote it), if any. */
function campaignTagOf(metadata: Record<string, unknown>): CampaignCallTag | undefined {
  const tag = metadata.campaign as Partial<CampaignCallTag> | undefined;
  if (!tag || typeof tag.campaignId !== 'string' || typeof tag.contactId !== 'string' || typeof tag.attempt !== 'number') return undefined;
  return { campaignId: tag.campaignId, contactId: tag.contactId, attempt: tag.attempt };
}

// ---- The conversation (ConversationRelay over the WebSocket API) ----------------------------------------------

/** Which call each connection carries: a fact that never changes, remembered per process. */
const callOfConnection = new Map<string, { orgId: string; sessionId: string }>();
const maxRememberedConnections = 10_000;

/**
 * `$connect`: the upgrade must carry Twilio's signature over the relay URL of an open call, and be the first with
 * that URL's token. The WebSocket API gives the query parsed, not as sent, so the URL is rebuilt as we issued it:
 * with `org`, `session` and `token` and nothing else, since a parameter we did not issue was not in the URL Twilio
 * signed. The signature is static, so whoever saw one upgrade could replay it: the token makes the URL open one
 * connection, once (ConversationRelay never reconnects a call's dropped socket).
 */
export async function openRelay(deps: VoiceDeps, connectionId: string, query: Readonly<Record<string, string | undefined>>, signature: string | undefined): Promise<void> {
  const { org: orgId, session: sessionId, token, ...unissued } = query;
  if (!orgId || !sessionId || !token) throw new NotFoundError('The relay URL names no call.');
  if (Object.keys(unissued).length > 0) throw new InvalidSignatureError('The X-Twilio-Signature does not match this request.');
  await verifiedCredentials(deps, orgId, relayUrl(deps, orgId, sessionId, token), {}, { signature, query: '' });
  await claimCall(deps, connectionId, { orgId, sessionId }, token);
  if (callOfConnection.size >= maxRememberedConnections) callOfConnection.delete(callOfConnection.keys().next().value as string);
  callOfConnection.set(connectionId, { orgId, sessionId });
}

/**
 * Binds the one connection an open call admits (ConversationRelay's, or the media worker's stream), consuming the
 * call's single-use token; its open session, or the error that refuses the connection.
 */
async function claimCall(deps: VoiceDeps, connectionId: string, call: CallRef, token: string): Promise<StoredSession> {
  const session = await deps.sessions.get(call.orgId, call.sessionId);
  if (!session || session.type !== 'VOICE' || session.state !== 'OPEN') throw new NotFoundError(`No open call for session ${call.sessionId}.`);
  if (!(await deps.voice.claimRelay(connectionId, call.orgId, call.sessionId, relayTokenHash(token)))) {
    throw new ForbiddenError('This call’s connection is already open: its token opens one connection, once.');
  }
  return session;
}

/**
 * The media worker's WebSocket upgrade: Twilio's signature over the stream URL of the call (its path names it), with
 * its organization's token, before any audio flows.
 */
export async function verifyMediaStreamUpgrade(deps: VoiceDeps, call: CallRef, signature: string | undefined): Promise<void> {
  await verifiedCredentials(deps, call.orgId, mediaStreamUrl(deps, call.orgId, call.sessionId), {}, { signature, query: '' });
}

/**
 * The stream's `start`: the call's single-use token (a `<Parameter>`) is consumed, as the relay's is at `$connect`,
 * so that a replayed upgrade opens nothing (decision 438). The call's agent, to talk with.
 */
export async function claimMediaStream(deps: VoiceDeps, call: CallRef, streamSid: string, parameters: Readonly<Record<string, string>>): Promise<Agent> {
  const token = parameters[streamTokenParameter];
  if (!token) throw new ForbiddenError('The stream carries no token.');
  const session = await claimCall(deps, `stream:${streamSid}`, call, token);
  return sessionAgent(deps, session);
}

/** `$disconnect`: nothing to end here; the carrier reports the end of the call (and the backstop covers silence). */
export function closeRelay(connectionId: string): void {
  callOfConnection.delete(connectionId);
}

/**
 * One ConversationRelay message. A final `prompt` (and a `dtmf` digit) is a user message: one turn of the turn
 * engine, whose text streams back as `text` tokens, the last with `last: true`. When the agent ends the
 * conversation, `end` follows and the call is hung up.
 */
export async function handleRelayMessage(deps: RelayDeps, connectionId: string, raw: string | undefined): Promise<void> {
  const call = callOfConnection.get(connectionId) ?? (await deps.voice.connection(connectionId));
  if (!call) throw new NotFoundError(`Connection ${connectionId} carries no call.`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw ?? '');
  } catch {
    parsed = undefined;
  }
  const message = relayInbound.safeParse(parsed);
  if (!message.success) {
    logger.warn('relay message ignored', { connectionId, sessionId: call.sessionId });
    return;
  }
  const data = message.data;
  switch (data.type) {
    case 'prompt':
      // Partial prompts are only sent when asked for (`partialPrompts`); the final one is what the callee said.
      if (data.last) await converse(deps, call, data.voicePrompt, { source: 'voice' }, relayChannel(deps, connectionId, call));
      return;
    case 'interrupt':
      await recordInterruption(deps, call, data.utteranceUntilInterrupt, data.durationUntilInterruptMs);
      return;
    case 'dtmf':
      await converse(deps, call, keyPressContent(data.digit), { source: 'dtmf', digit: data.digit }, relayChannel(deps, connectionId, call));
      return;
    case 'error':
      logger.warn('relay reported an error', { sessionId: call.sessionId, description: data.description });
      return;
    default:
      return;
  }
}

/** The relay's way of saying a reply: text tokens, then `last`, then `end` when the conversation is over. */
function relayChannel(deps: RelayDeps, connectionId: string, call: CallRef): ReplyChannel {
  // Tokens leave one after another, in order; a connection that is gone stops the sending, never the turn.
  let outbox = Promise.resolve();
  let connected = true;
  const send = (message: RelayOutbound) => {
    outbox = outbox.then(async () => {
      if (!connected) return;
      try {
        if ((await deps.relay.send(connectionId, message)) === 'sent') return;
        // The call ended while the agent spoke (the callee hung up): an ordinary end, the turn is still stored.
        connected = false;
        logger.debug('relay gone: the call ended while the agent spoke', { sessionId: call.sessionId });
      } catch (error) {
        connected = false;
        logger.warn('relay send failed', { sessionId: call.sessionId, error: error as Error });
      }
    });
  };
  return {
    delta: (text) => send({ type: 'text', token: text, last: false }),
    complete: () => send({ type: 'text', token: '', last: true }),
    end: (handoffData) => send(handoffData === undefined ? { type: 'end' } : { type: 'end', handoffData }),
    settled: () => outbox,
  };
}

/**
 * One turn of a call, whichever path carries it (ConversationRelay's text, the media worker's speech): the user's
 * message, the reply said through `channel` as it is made, and what the agent decided: a transfer ends the
 * conversation with a `handoffData` the `<Connect>` action reads, a goodbye ends it and hangs up once said.
 */
export async function converse(
  deps: ConversationDeps,
  call: CallRef,
  content: string,
  metadata: Record<string, unknown>,
  channel: ReplyChannel,
  speechToSpeech?: Pick<TurnOptions, 'model' | 'replyMetadata'>,
): Promise<void> {
  let turn;
  try {
    turn = await prepareTurn(deps, call.orgId, call.sessionId, { content, stream: true, metadata }, undefined, { knowledgeAsTool: speechToSpeech !== undefined });
  } catch (error) {
    logger.warn('voice turn refused', { sessionId: call.sessionId, error: error as Error });
    channel.end();
    await channel.settled();
    return;
  }
  let result;
  try {
    result = await runTurn(deps, turn, { delta: (_messageId, text) => channel.delta(text), failed: () => undefined }, { closeWhenAgentEnds: false, ...speechToSpeech });
  } catch (error) {
    if (!(error instanceof InvalidSessionError)) throw error;
    // The call ended during the reply (a hang-up): the session takes no more messages, an ordinary end of a call.
    logger.info('call ended during the reply; its last turn was not saved', { sessionId: call.sessionId });
    await channel.settled();
    return;
  }
  channel.complete();
  const transfer = result.routed.transfer;
  if (transfer) {
    // The conversation ends and the `<Connect>` action dials, with the call still up (handleRelayEnded).
    channel.end(JSON.stringify({ reasonCode: transferReasonCode, reason: transfer.reason ?? transfer.description }));
  } else if (result.agentEnded) {
    await deps.voice.markAgentHangup(call.orgId, call.sessionId, deps.clock.now().toISOString());
    channel.end();
  }
  await channel.settled();
  if (result.agentEnded && !transfer) await hangUp(deps, call);
}

/** The `reasonCode` of the `handoffData` a transfer ends the relay with. */
const transferReasonCode = 'transfer';

/**
 * The callee talked over the agent: the reply being spoken is cut to what was heard, and the rest is recorded as
 * `metadata.interruption`. It waits for a turn of this call still running in this process, so the reply it
 * truncates is written; the next prompt queues behind it.
 */
export async function recordInterruption(
  deps: ConversationDeps,
  call: CallRef,
  heard: string | ((reply: string) => string),
  durationMs: number | undefined,
): Promise<void> {
  const sessionKey = `${call.orgId}/${call.sessionId}`;
  const queued = await queueTurn(sessionKey, Date.now() + deps.config.TURN_TIMEOUT_SECONDS * 1000);
  try {
    const session = await deps.sessions.get(call.orgId, call.sessionId);
    if (!session || session.nextSeq <= 1) return;
    const [reply] = await deps.sessions.messageRange(call.orgId, call.sessionId, session.nextSeq - 1, session.nextSeq - 1);
    if (reply?.role !== 'ASSISTANT') return;
    // A speech-to-speech reply is known by its audio's length alone: what of its text was heard is estimated from it.
    const spoken = typeof heard === 'string' ? heard : heard(reply.content);
    if (reply.content.length <= spoken.length) return;
    const interruption = {
      at: deps.clock.now().toISOString(),
      spokenChars: spoken.length,
      unspoken: reply.content.slice(spoken.length),
      ...(durationMs !== undefined ? { durationUntilInterruptMs: durationMs } : {}),
    };
    await deps.sessions.truncateReply(call.orgId, call.sessionId, session.nextSeq - 1, spoken, interruption);
    histories.delete(sessionKey);
  } finally {
    queued.release();
  }
}

/** The agent hangs up: the carrier ends the call, and its `completed` ends the session as HANGUP_AGENT. */
export async function hangUp(deps: VoiceDeps, call: CallRef): Promise<void> {
  const [voiceCall, credentials] = await Promise.all([deps.voice.getCall(call.orgId, call.sessionId), deps.voice.getCredentials(call.orgId)]);
  if (!voiceCall?.callSid || !credentials) return;
  try {
    await deps.telephony.hangUp(credentials, voiceCall.callSid);
  } catch (error) {
    // The relay's end has been sent: the carrier's <Connect> action hangs up all the same.
    logger.warn('hang-up request failed', { sessionId: call.sessionId, error: error as Error });
  }
}
