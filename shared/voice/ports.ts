/** The ports of the voice context: the interfaces its use cases depend on, implemented by its adapters (issue 22 split shared/ports.ts by context). */
import type { StoredSession } from '../conversations/ports.ts';
import type { EndedReason } from '../conversations/session-schemas.ts';
import type { DomainEvent } from '../events/events.ts';
import type { Agent } from '../agents/agent-schemas.ts';
import type { SpeechToSpeech, SpeechToText, TextToSpeech } from '../speech/ports.ts';
import type { Model } from '../models/model-schemas.ts';
import type { AvailableNumberType, AvailablePhoneNumber, PhoneNumber, TwilioCallStatus, VoiceCall } from './voice-schemas.ts';

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

/** A search of the carrier's numbers for sale (Twilio's AvailablePhoneNumbers filters). */
export interface AvailableNumberSearch {
  /** ISO 3166-1 alpha-2, upper case. */
  country: string;
  type: AvailableNumberType;
  areaCode?: string | undefined;
  contains?: string | undefined;
  region?: string | undefined;
  postalCode?: string | undefined;
  locality?: string | undefined;
  nearNumber?: string | undefined;
  distance?: number | undefined;
  /** At most this many numbers. */
  size: number;
}

/** Where the carrier sends a number's calls: our voice webhook and the status callback of its inbound calls. */
export interface NumberRouting {
  voiceUrl: string;
  statusCallback: string;
}

/** A number of the organization's carrier account (Twilio's IncomingPhoneNumber). */
export interface CarrierNumber {
  /** The carrier's id of the number (`PN…`). */
  sid: string;
  phoneNumber: string;
  /** Set when an application or a SIP trunk answers the number: either makes the carrier ignore its voice URL. */
  voiceApplicationSid?: string | undefined;
  trunkSid?: string | undefined;
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
  /** Numbers for sale that match the search. */
  searchAvailableNumbers(credentials: TelephonyCredentials, search: AvailableNumberSearch): Promise<AvailablePhoneNumber[]>;
  /** The account's number `e164`, or undefined when the account has no such number. */
  findNumber(credentials: TelephonyCredentials, e164: string): Promise<CarrierNumber | undefined>;
  /**
   * Buys a number (this one, or any in the area code) routed to us; throws PhoneNumberUnavailableError when it is no
   * longer for sale or the area code has none.
   */
  buyNumber(credentials: TelephonyCredentials, wanted: { phoneNumber: string } | { areaCode: string }, routing: NumberRouting): Promise<CarrierNumber>;
  /** Routes the number's calls to us, removing the application or SIP trunk it has (either overrides the voice URL). */
  routeNumber(credentials: TelephonyCredentials, number: CarrierNumber, routing: NumberRouting): Promise<void>;
  /** Gives the number back to the carrier; a number already gone is not an error. */
  releaseNumber(credentials: TelephonyCredentials, sid: string): Promise<void>;
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
  /** `gone` when the connection has closed: the call ended (a hang-up while the agent spoke is an ordinary end). */
  send(connectionId: string, message: Record<string, unknown>): Promise<'sent' | 'gone'>;
}

/**
 * The speech of a call through the media worker: the STT and TTS of the agent's models and voice, for its
 * organization (whose own provider keys may apply), and the voice activity detector its end of turn may use.
 */
export interface CallSpeech {
  /** The recogniser, and the provider's model to open its streams with (its default when undefined). */
  speechToText(orgId: string, agent: Agent): Promise<{ stt: SpeechToText; model?: string | undefined }>;
  /** The synthesis, the voice it speaks with (its provider's default when the agent names none of it), and its model. */
  textToSpeech(orgId: string, agent: Agent): Promise<{ tts: TextToSpeech; voiceId: string; model?: string | undefined }>;
  /** A detector of speech and of `silenceMs` of silence after it, over telephone audio, by audio time. */
  voiceActivity(silenceMs: number): VoiceActivity;
  /**
   * The speech-to-speech model of an `sts` or `hybrid` agent (its `stsModelId`, else the deployment's first STS
   * model) and its provider's adapter; undefined when the deployment has none.
   */
  speechToSpeech(orgId: string, agent: Agent): Promise<{ sts: SpeechToSpeech; model: Model } | undefined>;
}

/** What a voice activity detector tells of each piece of audio it is given, by audio time. */
export interface VoiceActivity {
  /** `speech-started` when speech begins, `silence` once the threshold of silence follows speech; else undefined. */
  push(audio: Uint8Array): 'speech-started' | 'silence' | undefined;
}

/** A campaign dial's session says which campaign, contact and attempt it is (`metadata.campaign`). */
export interface CampaignCallTag {
  campaignId: string;
  contactId: string;
  attempt: number;
}

/** The end of a campaign's call, as voice tells it to whoever placed the call. */
export interface CampaignCallEnd {
  orgId: string;
  campaign: CampaignCallTag;
  /** Why the call ended: the attempt's outcome follows from it. */
  endedReason: EndedReason | undefined;
  /** When the end is handled, on the caller's clock (a retry is timed from it; tests move that clock). */
  at: Date;
}

/**
 * Told each time a campaign's call is reported ended, a repeated report included (campaigns settles the attempt,
 * once; wired by the composition root, since campaigns sits above voice).
 */
export type CampaignCallEnded = (end: CampaignCallEnd) => Promise<void>;

export interface StoredPhoneNumber extends PhoneNumber {
  orgId: string;
  /** The carrier's id of the number (Twilio's `PN…`), kept to release it; numbers imported before it was kept have none. */
  carrierSid?: string | undefined;
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
