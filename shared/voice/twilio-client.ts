import { PhoneNumberUnavailableError, TelephonyCredentialsRejectedError, TelephonyRequestRejectedError, TelephonyUnavailableError } from '../platform/errors.ts';
import type { AvailableNumberSearch, CarrierNumber, NumberRouting, OutboundCallRequest, Telephony, TelephonyCredentials } from './ports.ts';
import type { AvailableNumberType, AvailablePhoneNumber, TwilioCallStatus } from './voice-schemas.ts';

/** Twilio's REST API can answer slowly under load; a call start waits this long before it fails. */
const requestTimeoutMs = 10_000;

/** The AvailablePhoneNumbers list of each number type. */
const availableNumberLists: Record<AvailableNumberType, string> = { local: 'Local', mobile: 'Mobile', toll_free: 'TollFree' };

/**
 * Twilio's errors that mean "this number is not for sale (any more)": 21422 PhoneNumber is not available, 21452 no
 * phone numbers found in area code (twilio.com/docs/errors/21422, /21452).
 */
const numberUnavailableCodes: ReadonlySet<number> = new Set([21422, 21452]);

/**
 * The Twilio REST calls the platform makes, over `fetch` (the `twilio` package would add megabytes to each
 * bundle and its start-up; decision 121): calls, recordings, and the account's numbers (search, buy, route, release).
 * `baseUrl` is `https://api.twilio.com` on AWS and the local simulator's address locally: the same code talks to both.
 */
export class TwilioRestClient implements Telephony {
  private readonly baseUrl: string;
  private readonly fetchFn: typeof fetch;

  constructor(baseUrl: string, fetchFn: typeof fetch = fetch) {
    this.baseUrl = baseUrl.replace(/\/$/, '');
    this.fetchFn = fetchFn;
  }

  async createCall(credentials: TelephonyCredentials, request: OutboundCallRequest): Promise<{ callSid: string; status: TwilioCallStatus }> {
    const form = new URLSearchParams({
      To: request.to,
      From: request.from,
      Twiml: request.twiml,
      StatusCallback: request.statusCallback,
      StatusCallbackMethod: 'POST',
      TimeLimit: String(request.timeLimitSeconds),
      Timeout: String(request.ringTimeoutSeconds),
      Record: 'true',
      RecordingStatusCallback: request.recordingStatusCallback,
      RecordingStatusCallbackEvent: 'completed',
    });
    for (const event of ['initiated', 'ringing', 'answered', 'completed']) form.append('StatusCallbackEvent', event);
    const body = (await this.post(credentials, `/Calls.json`, form)) as { sid: string; status: TwilioCallStatus };
    return { callSid: body.sid, status: body.status };
  }

  async hangUp(credentials: TelephonyCredentials, callSid: string): Promise<void> {
    await this.post(credentials, `/Calls/${encodeURIComponent(callSid)}.json`, new URLSearchParams({ Status: 'completed' }));
  }

  /** The recording is fetched from Twilio's API by its id, never from a URL a callback names. */
  async fetchRecording(credentials: TelephonyCredentials, recordingSid: string): Promise<{ body: Uint8Array; contentType: string }> {
    const response = await this.request(credentials, 'GET', `/Recordings/${encodeURIComponent(recordingSid)}.mp3`);
    if (!response.ok) throw new TelephonyUnavailableError(`Twilio answered ${response.status} for recording ${recordingSid}.`);
    return { body: new Uint8Array(await response.arrayBuffer()), contentType: response.headers.get('content-type') ?? 'audio/mpeg' };
  }

  async deleteRecording(credentials: TelephonyCredentials, recordingSid: string): Promise<void> {
    const response = await this.request(credentials, 'DELETE', `/Recordings/${encodeURIComponent(recordingSid)}.json`);
    await response.arrayBuffer();
    if (!response.ok && response.status !== 404) throw new TelephonyUnavailableError(`Twilio answered ${response.status} deleting recording ${recordingSid}.`);
  }

  async searchAvailableNumbers(credentials: TelephonyCredentials, search: AvailableNumberSearch): Promise<AvailablePhoneNumber[]> {
    const query = definedParams({
      AreaCode: search.areaCode,
      Contains: search.contains,
      InRegion: search.region,
      InPostalCode: search.postalCode,
      InLocality: search.locality,
      NearNumber: search.nearNumber,
      Distance: search.distance === undefined ? undefined : String(search.distance),
      // Every number an agent answers takes calls.
      VoiceEnabled: 'true',
      PageSize: String(search.size),
    });
    const path = `/AvailablePhoneNumbers/${encodeURIComponent(search.country)}/${availableNumberLists[search.type]}.json?${query}`;
    const response = await this.request(credentials, 'GET', path);
    const text = await response.text();
    // Twilio answers 404 for a country, or a type of number in a country, it has no list of.
    if (response.status === 404) throw new TelephonyRequestRejectedError(`Twilio offers no ${search.type} numbers in ${search.country}.`);
    if (!response.ok) throw numberRefusal(response.status, text);
    const body = JSON.parse(text) as { available_phone_numbers?: TwilioAvailableNumber[] };
    return (body.available_phone_numbers ?? []).map(availableNumberOf);
  }

  async findNumber(credentials: TelephonyCredentials, e164: string): Promise<CarrierNumber | undefined> {
    // `PhoneNumber` also matches partial numbers, so the answer is filtered to the number itself.
    const response = await this.request(credentials, 'GET', `/IncomingPhoneNumbers.json?${new URLSearchParams({ PhoneNumber: e164 })}`);
    const text = await response.text();
    if (!response.ok) throw numberRefusal(response.status, text);
    const body = JSON.parse(text) as { incoming_phone_numbers?: TwilioIncomingNumber[] };
    const found = (body.incoming_phone_numbers ?? []).find((number) => number.phone_number === e164);
    return found && carrierNumberOf(found);
  }

  async buyNumber(credentials: TelephonyCredentials, wanted: { phoneNumber: string } | { areaCode: string }, routing: NumberRouting): Promise<CarrierNumber> {
    const form = new URLSearchParams('phoneNumber' in wanted ? { PhoneNumber: wanted.phoneNumber } : { AreaCode: wanted.areaCode });
    for (const [name, value] of routingParams(routing)) form.append(name, value);
    const response = await this.request(credentials, 'POST', '/IncomingPhoneNumbers.json', form);
    const text = await response.text();
    if (!response.ok) throw numberRefusal(response.status, text);
    return carrierNumberOf(JSON.parse(text) as TwilioIncomingNumber);
  }

  async routeNumber(credentials: TelephonyCredentials, number: CarrierNumber, routing: NumberRouting): Promise<void> {
    const form = new URLSearchParams(routingParams(routing));
    // An application or a SIP trunk on the number makes Twilio ignore its voice URL; an empty value removes it.
    if (number.voiceApplicationSid) form.append('VoiceApplicationSid', '');
    if (number.trunkSid) form.append('TrunkSid', '');
    const response = await this.request(credentials, 'POST', `/IncomingPhoneNumbers/${encodeURIComponent(number.sid)}.json`, form);
    const text = await response.text();
    if (!response.ok) throw numberRefusal(response.status, text);
  }

  async releaseNumber(credentials: TelephonyCredentials, sid: string): Promise<void> {
    const response = await this.request(credentials, 'DELETE', `/IncomingPhoneNumbers/${encodeURIComponent(sid)}.json`);
    const text = await response.text();
    if (!response.ok && response.status !== 404) throw numberRefusal(response.status, text);
  }

  private async request(credentials: TelephonyCredentials, method: string, path: string, form?: URLSearchParams): Promise<Response> {
    const url = `${this.baseUrl}/2010-04-01/Accounts/${encodeURIComponent(credentials.accountSid)}${path}`;
    try {
      return await this.fetchFn(url, {
        method,
        headers: {
          authorization: `Basic ${Buffer.from(`${credentials.accountSid}:${credentials.authToken}`).toString('base64')}`,
          accept: 'application/json',
          ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
        },
        ...(form ? { body: form.toString() } : {}),
        signal: AbortSignal.timeout(requestTimeoutMs),
      });
    } catch (error) {
      throw new TelephonyUnavailableError('The telephony provider could not be reached; retry.', { cause: error });
    }
  }

  private async post(credentials: TelephonyCredentials, path: string, form: URLSearchParams): Promise<unknown> {
    const response = await this.request(credentials, 'POST', path, form);
    const text = await response.text();
    if (response.status === 401 || response.status === 403) {
      throw new TelephonyCredentialsRejectedError('Twilio refused the stored credentials; PUT /v1/chat/telephony/twilio with valid ones.');
    }
    if (!response.ok) {
      const message = safeMessage(text);
      throw new TelephonyUnavailableError(`Twilio answered ${response.status}${message ? `: ${message}` : ''}.`);
    }
    return text ? JSON.parse(text) : {};
  }
}

/** Twilio's error body is `{code, message, more_info, status}`; only its message is worth passing on. */
function safeMessage(text: string): string | undefined {
  return twilioError(text).message;
}

function twilioError(text: string): { code?: number | undefined; message?: string | undefined } {
  try {
    const parsed = JSON.parse(text) as { code?: unknown; message?: unknown };
    return {
      code: typeof parsed.code === 'number' ? parsed.code : undefined,
      message: typeof parsed.message === 'string' ? parsed.message.slice(0, 300) : undefined,
    };
  } catch {
    return {};
  }
}

/**
 * What a refused request about numbers means to our caller: the credentials (401/403), a number no longer for sale,
 * another mistake the caller can correct (Twilio's message and code passed on), or Twilio being unavailable (5xx).
 */
function numberRefusal(status: number, text: string): Error {
  if (status === 401 || status === 403) {
    return new TelephonyCredentialsRejectedError('Twilio refused the stored credentials; PUT /v1/chat/telephony/twilio with valid ones.');
  }
  const { code, message } = twilioError(text);
  const said = `${message ?? `HTTP ${status}`}${code ? ` (Twilio error ${code})` : ''}`;
  if (status >= 500 || status === 429) return new TelephonyUnavailableError(`Twilio answered ${status}: ${said}; retry.`);
  if (code !== undefined && numberUnavailableCodes.has(code)) return new PhoneNumberUnavailableError(`${said}. Search again and pick another number.`);
  return new TelephonyRequestRejectedError(`Twilio refused the request: ${said}.`);
}

/** The query of the fields that are set. */
function definedParams(fields: Record<string, string | undefined>): URLSearchParams {
  return new URLSearchParams(Object.entries(fields).filter((field): field is [string, string] => field[1] !== undefined));
}

/** Our webhook answers the number's calls, and hears the end of each (both POST, as they are signed over the form). */
const routingParams = (routing: NumberRouting): [string, string][] => [
  ['VoiceUrl', routing.voiceUrl],
  ['VoiceMethod', 'POST'],
  ['StatusCallback', routing.statusCallback],
  ['StatusCallbackMethod', 'POST'],
];

/** An entry of AvailablePhoneNumbers as Twilio writes it (twilio.com/docs/phone-numbers/api/availablephonenumberlocal-resource). */
interface TwilioAvailableNumber {
  phone_number: string;
  friendly_name?: string | null;
  iso_country?: string | null;
  locality?: string | null;
  region?: string | null;
  postal_code?: string | null;
  address_requirements?: string | null;
  capabilities?: Record<string, boolean | null> | null;
}

/** An IncomingPhoneNumber as Twilio writes it (twilio.com/docs/phone-numbers/api/incomingphonenumber-resource). */
interface TwilioIncomingNumber {
  sid: string;
  phone_number: string;
  voice_application_sid?: string | null;
  trunk_sid?: string | null;
}

function availableNumberOf(number: TwilioAvailableNumber): AvailablePhoneNumber {
  // The documented examples spell capabilities `sms`/`mms`; live answers have been seen with `SMS`/`MMS`.
  const capability = (name: string) => Object.entries(number.capabilities ?? {}).some(([key, value]) => key.toLowerCase() === name && value === true);
  return {
    phone_number: number.phone_number,
    friendly_name: number.friendly_name ?? number.phone_number,
    iso_country: number.iso_country ?? '',
    ...(number.locality ? { locality: number.locality } : {}),
    ...(number.region ? { region: number.region } : {}),
    ...(number.postal_code ? { postal_code: number.postal_code } : {}),
    address_requirements: number.address_requirements ?? 'none',
    capabilities: { voice: capability('voice'), sms: capability('sms'), mms: capability('mms') },
  };
}

const carrierNumberOf = (number: TwilioIncomingNumber): CarrierNumber => ({
  sid: number.sid,
  phoneNumber: number.phone_number,
  ...(number.voice_application_sid ? { voiceApplicationSid: number.voice_application_sid } : {}),
  ...(number.trunk_sid ? { trunkSid: number.trunk_sid } : {}),
});
