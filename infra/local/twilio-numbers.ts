import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';

/**
 * The Twilio simulator's phone numbers: AvailablePhoneNumbers (numbers for sale) and IncomingPhoneNumbers (an
 * account's numbers: buy, read, route, release) as Twilio's REST API documents them
 * (twilio.com/docs/phone-numbers/api/availablephonenumberlocal-resource,
 * twilio.com/docs/phone-numbers/api/incomingphonenumber-resource): form-encoded bodies, JSON answers with Twilio's
 * field names, Twilio's error JSON `{code, message, more_info, status}`.
 *
 * Never more forgiving than Twilio: only a number a search offered (and nobody bought since) can be bought, a number
 * belongs to one account, a filter the simulator cannot honour is refused rather than ignored, and a form that is
 * not `application/x-www-form-urlencoded` is not read. It sells US and Canadian local and toll-free numbers; other
 * countries and types answer 404, as Twilio does for a list it does not have.
 */

/** A number of an account, with the fields Twilio's IncomingPhoneNumber has that the platform reads or writes. */
export interface SimulatedNumber {
  sid: string;
  accountSid: string;
  phoneNumber: string;
  friendlyName: string;
  voiceUrl: string;
  voiceMethod: string;
  statusCallback: string;
  statusCallbackMethod: string;
  voiceApplicationSid: string;
  trunkSid: string | null;
  isoCountry: string;
  dateCreated: Date;
  dateUpdated: Date;
}

/** An account's request as the simulator authenticated it (Basic auth: the account SID and its token). */
export interface AccountRequest {
  method: string;
  /** The path after `/2010-04-01/Accounts/{AccountSid}/`. */
  resource: string;
  query: URLSearchParams;
  /** The form, when the body was form-encoded; undefined otherwise (Twilio does not read other bodies). */
  form: URLSearchParams | undefined;
  accountSid: string;
  authToken: string;
}

export interface NumberInventory {
  /** Answers a request for an AvailablePhoneNumbers or IncomingPhoneNumbers resource; false when it is neither. */
  handle(request: AccountRequest, response: ServerResponse): boolean;
  /** The number, in whichever account has it. */
  byPhoneNumber(e164: string): SimulatedNumber | undefined;
  /** The token the account last authenticated with: Twilio signs the requests of the account's numbers with it. */
  tokenOf(accountSid: string): string | undefined;
  /** A number the account has already, bought in Twilio's console or ported in (tests and `npm start` use it). */
  add(options: { accountSid: string; authToken: string; phoneNumber: string; voiceApplicationSid?: string; trunkSid?: string }): SimulatedNumber;
}

/** Where the numbers of an area code are: Twilio's `locality`, `region`, `postal_code` of a number. */
interface Place {
  areaCode: string;
  country: 'US' | 'CA';
  locality: string;
  region: string;
  postalCode: string;
  rateCenter: string;
  lata: string;
  latitude: string;
  longitude: string;
}

/** The places the simulator knows; numbers of other area codes have no place (Twilio has some with none, too). */
const places: readonly Place[] = [
  { areaCode: '212', country: 'US', locality: 'New York', region: 'NY', postalCode: '10001', rateCenter: 'NWYRCYZN01', lata: '132', latitude: '40.750000', longitude: '-73.997000' },
  { areaCode: '415', country: 'US', locality: 'San Francisco', region: 'CA', postalCode: '94103', rateCenter: 'SNFC CNTRL', lata: '722', latitude: '37.773000', longitude: '-122.411000' },
  { areaCode: '510', country: 'US', locality: 'Oakland', region: 'CA', postalCode: '94612', rateCenter: 'OKLD', lata: '722', latitude: '37.805000', longitude: '-122.273000' },
  { areaCode: '312', country: 'US', locality: 'Chicago', region: 'IL', postalCode: '60601', rateCenter: 'CHCGZONE01', lata: '358', latitude: '41.886000', longitude: '-87.618000' },
  { areaCode: '206', country: 'US', locality: 'Seattle', region: 'WA', postalCode: '98101', rateCenter: 'SEATTLE', lata: '674', latitude: '47.610000', longitude: '-122.334000' },
  { areaCode: '512', country: 'US', locality: 'Austin', region: 'TX', postalCode: '78701', rateCenter: 'AUSTIN', lata: '558', latitude: '30.271000', longitude: '-97.743000' },
  { areaCode: '808', country: 'US', locality: 'Hilo', region: 'HI', postalCode: '96720', rateCenter: 'HILO', lata: '834', latitude: '19.720000', longitude: '-155.090000' },
  { areaCode: '416', country: 'CA', locality: 'Toronto', region: 'ON', postalCode: 'M5H', rateCenter: 'TORONTO', lata: '', latitude: '43.652000', longitude: '-79.383000' },
  { areaCode: '604', country: 'CA', locality: 'Vancouver', region: 'BC', postalCode: 'V6B', rateCenter: 'VANCOUVER', lata: '', latitude: '49.282000', longitude: '-123.118000' },
];

const canadianAreaCodes = new Set(['204', '236', '249', '250', '289', '306', '343', '365', '403', '416', '418', '431', '437', '438', '450', '506', '514', '519', '548', '579', '581', '587', '604', '613', '639', '647', '672', '705', '709', '778', '780', '782', '807', '819', '825', '867', '873', '902', '905']);
const tollFreeAreaCodes = ['800', '833', '844', '855', '866', '877', '888'];

/**
 * Area codes with no number for sale: 533, as Twilio's test credentials document it (twilio.com/docs/iam/test-credentials:
 * "This area code doesn't have any available phone numbers", error 21452), and 555, which is not an area code.
 */
const soldOutAreaCodes = new Set(['533', '555']);

/** The filters of a search the simulator honours; any other is refused (20001), never silently ignored. */
const searchFilters = new Set(['AreaCode', 'Contains', 'InRegion', 'InPostalCode', 'InLocality', 'NearNumber', 'Distance', 'VoiceEnabled', 'SmsEnabled', 'MmsEnabled', 'PageSize', 'Page']);

const listsByType: Record<string, 'local' | 'tollFree'> = { 'Local.json': 'local', 'TollFree.json': 'tollFree' };

/** A letter counts as its keypad digit in `Contains` (STORM is 78676). */
const keypad: Record<string, string> = Object.fromEntries(
  Object.entries({ 2: 'ABC', 3: 'DEF', 4: 'GHI', 5: 'JKL', 6: 'MNO', 7: 'PQRS', 8: 'TUV', 9: 'WXYZ' }).flatMap(([digit, letters]) => [...letters].map((letter) => [letter, digit])),
);

export function createNumberInventory(): NumberInventory {
  const numbers = new Map<string, SimulatedNumber>();
  const tokens = new Map<string, string>();
  /** Numbers a search offered and nobody has bought since, with where they are. */
  const offered = new Map<string, { place: Place | undefined; country: 'US' | 'CA' }>();

  const byPhoneNumber = (e164: string) => [...numbers.values()].find((number) => number.phoneNumber === e164);

  const newNumber = (accountSid: string, phoneNumber: string, form: URLSearchParams | undefined): SimulatedNumber => {
    const now = new Date();
    const number: SimulatedNumber = {
      sid: `PN${randomBytes(16).toString('hex')}`,
      accountSid,
      phoneNumber,
      friendlyName: friendlyNameOf(phoneNumber),
      // What a number Twilio sells answers with until it is configured.
      voiceUrl: 'https://demo.twilio.com/welcome/voice/',
      voiceMethod: 'POST',
      statusCallback: '',
      statusCallbackMethod: 'POST',
      voiceApplicationSid: '',
      trunkSid: null,
      isoCountry: canadianAreaCodes.has(phoneNumber.slice(2, 5)) ? 'CA' : 'US',
      dateCreated: now,
      dateUpdated: now,
    };
    if (form) configure(number, form);
    numbers.set(number.sid, number);
    return number;
  };

  function search(request: AccountRequest, list: 'local' | 'tollFree', country: 'US' | 'CA', response: ServerResponse): void {
    const { query } = request;
    const unknown = [...query.keys()].find((name) => !searchFilters.has(name));
    if (unknown) return twilioError(response, 400, 20001, `Unknown parameter ${unknown}`);
    const areaCode = query.get('AreaCode') ?? undefined;
    if (areaCode !== undefined && !validAreaCode(areaCode, list)) return twilioError(response, 400, 21451, 'Invalid area code');
    const contains = query.get('Contains') ?? undefined;
    if (contains !== undefined && !/^[0-9A-Za-z*]{2,}$/.test(contains)) return twilioError(response, 400, 21421, 'Contains is invalid');
    const pageSize = Math.min(Number(query.get('PageSize') ?? 50) || 50, 1000);
    // Every number the simulator sells takes calls, texts and MMS: asking for one without any of them finds none.
    const withoutCapability = ['VoiceEnabled', 'SmsEnabled', 'MmsEnabled'].some((name) => query.get(name) === 'false');
    const wantedPlace = (place: Place | undefined) =>
      (!query.has('InRegion') || place?.region === query.get('InRegion')) &&
      (!query.has('InLocality') || place?.locality.toLowerCase() === query.get('InLocality')?.toLowerCase()) &&
      (!query.has('InPostalCode') || place?.postalCode === query.get('InPostalCode'));
    // NearNumber: numbers of the same area code, whatever the Distance (the simulator knows no geography finer than that).
    const near = query.get('NearNumber')?.replace(/^\+1/, '').slice(0, 3);
    let areaCodes: string[];
    if (list === 'tollFree') areaCodes = areaCode ? [areaCode] : tollFreeAreaCodes;
    else if (areaCode ?? near) areaCodes = [(areaCode ?? near) as string];
    else areaCodes = places.filter((place) => place.country === country).map((place) => place.areaCode);
    if (near && areaCode && near !== areaCode) areaCodes = [];
    const candidates = areaCodes.filter((code) => !withoutCapability && !soldOutAreaCodes.has(code) && (list === 'tollFree' || (canadianAreaCodes.has(code) ? 'CA' : 'US') === country));
    const found: Record<string, unknown>[] = [];
    for (let attempt = 0; found.length < pageSize && candidates.length > 0 && attempt < pageSize * 4; attempt += 1) {
      const code = candidates[attempt % candidates.length] as string;
      const place = list === 'tollFree' ? undefined : places.find((known) => known.areaCode === code);
      if (list === 'local' && !wantedPlace(place)) continue;
      if (list === 'tollFree' && (query.has('InRegion') || query.has('InLocality') || query.has('InPostalCode'))) continue;
      const e164 = generateNumber(code, contains);
      if (!e164 || byPhoneNumber(e164) || found.some((entry) => entry.phone_number === e164)) continue;
      offered.set(e164, { place, country });
      found.push(availableEntry(e164, place, country));
    }
    const uri = `/2010-04-01/Accounts/${request.accountSid}/AvailablePhoneNumbers/${country}/${list === 'local' ? 'Local' : 'TollFree'}.json`;
    json(response, 200, { available_phone_numbers: found, end: Math.max(found.length - 1, 0), first_page_uri: `${uri}?PageSize=${pageSize}&Page=0`, next_page_uri: null, page: 0, page_size: pageSize, previous_page_uri: null, start: 0, uri: `${uri}?PageSize=${pageSize}` });
  }

  function buy(request: AccountRequest, response: ServerResponse): void {
    const form = request.form ?? new URLSearchParams();
    const wanted = form.get('PhoneNumber');
    const areaCode = form.get('AreaCode');
    if (wanted !== null) {
      if (!/^\+[1-9]\d{6,14}$/.test(wanted)) return twilioError(response, 400, 21421, 'PhoneNumber is invalid');
      if (!offered.has(wanted) || byPhoneNumber(wanted)) return twilioError(response, 400, 21422, 'PhoneNumber is not available');
      offered.delete(wanted);
      return json(response, 201, incomingEntry(newNumber(request.accountSid, wanted, form)));
    }
    if (areaCode !== null) {
      if (!validAreaCode(areaCode, 'local')) return twilioError(response, 400, 21451, 'Invalid area code');
      let e164: string | undefined;
      for (let attempt = 0; !e164 && !soldOutAreaCodes.has(areaCode) && attempt < 10; attempt += 1) {
        const candidate = generateNumber(areaCode, undefined);
        if (candidate && !byPhoneNumber(candidate)) e164 = candidate;
      }
      if (!e164) return twilioError(response, 400, 21452, 'No phone numbers found in area code');
      return json(response, 201, incomingEntry(newNumber(request.accountSid, e164, form)));
    }
    return twilioError(response, 400, 21421, 'PhoneNumber is required');
  }

  function read(request: AccountRequest, response: ServerResponse): void {
    const pattern = request.query.get('PhoneNumber');
    // `PhoneNumber` matches part of a number too, `*` standing for any digit.
    const matches = (e164: string) => pattern === null || new RegExp(pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '\\d')).test(e164);
    const owned = [...numbers.values()].filter((number) => number.accountSid === request.accountSid && matches(number.phoneNumber));
    const pageSize = Math.min(Number(request.query.get('PageSize') ?? 50) || 50, 1000);
    const uri = `/2010-04-01/Accounts/${request.accountSid}/IncomingPhoneNumbers.json`;
    const page = owned.slice(0, pageSize);
    json(response, 200, { incoming_phone_numbers: page.map(incomingEntry), end: Math.max(page.length - 1, 0), first_page_uri: `${uri}?PageSize=${pageSize}&Page=0`, next_page_uri: null, page: 0, page_size: pageSize, previous_page_uri: null, start: 0, uri });
  }

  return {
    byPhoneNumber,
    tokenOf: (accountSid) => tokens.get(accountSid),
    add: (options) => {
      if (byPhoneNumber(options.phoneNumber)) throw new Error(`${options.phoneNumber} belongs to an account already`);
      tokens.set(options.accountSid, options.authToken);
      const number = newNumber(options.accountSid, options.phoneNumber, undefined);
      if (options.voiceApplicationSid) number.voiceApplicationSid = options.voiceApplicationSid;
      if (options.trunkSid) number.trunkSid = options.trunkSid;
      return number;
    },
    handle(request, response) {
      const available = /^AvailablePhoneNumbers\/([^/]+)\/([^/]+)$/.exec(request.resource);
      const incoming = /^IncomingPhoneNumbers(?:\/(PN[0-9a-f]{32}))?\.json$/.exec(request.resource);
      if (!available && !incoming && !request.resource.startsWith('IncomingPhoneNumbers')) return false;
      tokens.set(request.accountSid, request.authToken);
      const notFound = () => twilioError(response, 404, 20404, `The requested resource /2010-04-01/Accounts/${request.accountSid}/${request.resource} was not found`);
      if (available) {
        const country = available[1] as string;
        const list = listsByType[available[2] as string];
        if (request.method !== 'GET' || (country !== 'US' && country !== 'CA') || !list) notFound();
        else search(request, list, country as 'US' | 'CA', response);
        return true;
      }
      if (!incoming) {
        notFound();
        return true;
      }
      const sid = incoming[1];
      if (!sid) {
        if (request.method === 'GET') read(request, response);
        else if (request.method === 'POST') buy(request, response);
        else notFound();
        return true;
      }
      const number = numbers.get(sid);
      if (!number || number.accountSid !== request.accountSid) {
        notFound();
        return true;
      }
      if (request.method === 'GET') json(response, 200, incomingEntry(number));
      else if (request.method === 'POST') {
        if (request.form) configure(number, request.form);
        json(response, 200, incomingEntry(number));
      } else if (request.method === 'DELETE') {
        numbers.delete(sid);
        response.writeHead(204).end();
      } else notFound();
      return true;
    },
  };
}

/** Applies an IncomingPhoneNumber's writable fields that the form sets; an application and a trunk exclude each other. */
function configure(number: SimulatedNumber, form: URLSearchParams): void {
  const text = (name: string) => form.get(name) ?? undefined;
  number.voiceUrl = text('VoiceUrl') ?? number.voiceUrl;
  number.voiceMethod = text('VoiceMethod')?.toUpperCase() ?? number.voiceMethod;
  number.statusCallback = text('StatusCallback') ?? number.statusCallback;
  number.statusCallbackMethod = text('StatusCallbackMethod')?.toUpperCase() ?? number.statusCallbackMethod;
  number.friendlyName = text('FriendlyName') ?? number.friendlyName;
  const application = text('VoiceApplicationSid');
  const trunk = text('TrunkSid');
  if (application !== undefined) {
    number.voiceApplicationSid = application;
    if (application) number.trunkSid = null;
  }
  if (trunk !== undefined) {
    number.trunkSid = trunk || null;
    if (trunk) number.voiceApplicationSid = '';
  }
  number.dateUpdated = new Date();
}

function validAreaCode(code: string, list: 'local' | 'tollFree'): boolean {
  return list === 'tollFree' ? tollFreeAreaCodes.includes(code) : /^[2-9][0-8]\d$/.test(code);
}

/**
 * A random number of the area code matching `contains` (placed at the end of the number), never in 555-01XX, the
 * fiction range whose numbers are the simulator's callees.
 */
function generateNumber(areaCode: string, contains: string | undefined): string | undefined {
  const pattern = (contains ?? '').toUpperCase().replace(/[A-Z]/g, (letter) => keypad[letter] ?? '');
  // An exchange starts with 2–9: drawn so, a search of one number never comes back empty by chance.
  const national = `${areaCode}${2 + ((randomBytes(1)[0] as number) % 8)}${randomDigits(6)}`;
  const filled = [...pattern].map((character) => (character === '*' ? randomDigits(1) : character)).join('');
  if (filled.length > 10) return undefined;
  const candidate = national.slice(0, 10 - filled.length) + filled;
  // The pattern may cover the area code; it must still be this one, and the exchange cannot start with 0 or 1.
  if (!candidate.startsWith(areaCode) || /^[01]/.test(candidate.slice(3)) || candidate.slice(3, 8) === '55501') return undefined;
  return `+1${candidate}`;
}

const randomDigits = (count: number): string => Array.from(randomBytes(count), (byte) => String(byte % 10)).join('');

const friendlyNameOf = (e164: string): string => (/^\+1\d{10}$/.test(e164) ? `(${e164.slice(2, 5)}) ${e164.slice(5, 8)}-${e164.slice(8)}` : e164);

function availableEntry(e164: string, place: Place | undefined, country: 'US' | 'CA'): Record<string, unknown> {
  return {
    friendly_name: friendlyNameOf(e164),
    phone_number: e164,
    lata: place?.lata || null,
    locality: place?.locality ?? null,
    rate_center: place?.rateCenter ?? null,
    latitude: place?.latitude ?? null,
    longitude: place?.longitude ?? null,
    region: place?.region ?? null,
    postal_code: place?.postalCode ?? null,
    iso_country: country,
    address_requirements: 'none',
    beta: false,
    // Live answers spell these `SMS` and `MMS` (the documented example has them in lower case); clients read both.
    capabilities: { voice: true, SMS: true, MMS: true, fax: false },
  };
}

/** An IncomingPhoneNumber as Twilio writes it (its dates in RFC 2822, as all of the 2010-04-01 API's). */
function incomingEntry(number: SimulatedNumber): Record<string, unknown> {
  return {
    account_sid: number.accountSid,
    address_requirements: 'none',
    address_sid: null,
    api_version: '2010-04-01',
    beta: false,
    bundle_sid: null,
    capabilities: { fax: false, mms: true, sms: true, voice: true },
    date_created: number.dateCreated.toUTCString().replace('GMT', '+0000'),
    date_updated: number.dateUpdated.toUTCString().replace('GMT', '+0000'),
    emergency_address_sid: null,
    emergency_address_status: 'unregistered',
    emergency_status: 'Inactive',
    friendly_name: number.friendlyName,
    identity_sid: null,
    origin: 'twilio',
    phone_number: number.phoneNumber,
    sid: number.sid,
    sms_application_sid: '',
    sms_fallback_method: 'POST',
    sms_fallback_url: '',
    sms_method: 'POST',
    sms_url: '',
    status: 'in-use',
    status_callback: number.statusCallback,
    status_callback_method: number.statusCallbackMethod,
    trunk_sid: number.trunkSid,
    type: 'local',
    uri: `/2010-04-01/Accounts/${number.accountSid}/IncomingPhoneNumbers/${number.sid}.json`,
    voice_application_sid: number.voiceApplicationSid,
    voice_caller_id_lookup: false,
    voice_fallback_method: 'POST',
    voice_fallback_url: null,
    voice_method: number.voiceMethod,
    voice_receive_mode: 'voice',
    voice_url: number.voiceUrl,
  };
}

function json(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/** Twilio's error JSON (twilio.com/docs/usage/twilios-response#response-formats-exceptions). */
export function twilioError(response: ServerResponse, status: number, code: number, message: string): void {
  json(response, status, { code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status });
}
