/**
 * The number requests of our Twilio client, field by field against the official `twilio` package's for the same
 * operations (method, URL, query, form, Basic auth, content type), and Twilio's documented answers
 * (test/fixtures/twilio/, each with its source) read by our client. Offline: both clients are given a stand-in for
 * the network that records what they would send. Then the official client against the Twilio simulator: what it
 * understands of Twilio, it understands of the simulator.
 */
import { readFileSync } from 'node:fs';
import twilio from 'twilio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTwilioSimulator, type TwilioSimulator } from '../../infra/local/twilio-simulator.ts';
import { PhoneNumberUnavailableError } from '../../shared/platform/errors.ts';
import { conversationRelayTwiml } from '../../shared/voice/conversation-relay.ts';
import type { AvailableNumberSearch, CarrierNumber, NumberRouting } from '../../shared/voice/ports.ts';
import { TwilioRestClient } from '../../shared/voice/twilio-client.ts';

const credentials = { accountSid: `AC${'a'.repeat(32)}`, authToken: 'f'.repeat(32) };
const routing: NumberRouting = { voiceUrl: 'https://api.example.com/twilio/voice', statusCallback: 'https://api.example.com/twilio/voice/status' };
const fixture = (name: string) => JSON.parse(readFileSync(new URL(`../fixtures/twilio/${name}`, import.meta.url), 'utf8')) as { example: unknown; status?: number };

/** A request as it goes on the wire: the parts Twilio reads. */
interface WireRequest {
  method: string;
  path: string;
  query: [string, string][];
  form: [string, string][];
  authorization: string | undefined;
  contentType: string | undefined;
}

const sorted = (params: URLSearchParams): [string, string][] => [...params].sort(([a, x], [b, y]) => a.localeCompare(b) || x.localeCompare(y));

/** Our client, answered `body` with `status`, and what it sent. */
function ourClient(body: unknown = {}, status = 200) {
  const sent: WireRequest[] = [];
  const client = new TwilioRestClient('https://api.twilio.com', async (input, init) => {
    const url = new URL(String(input));
    const headers = new Headers(init?.headers);
    sent.push({
      method: init?.method ?? 'GET',
      path: url.pathname,
      query: sorted(url.searchParams),
      form: sorted(new URLSearchParams(typeof init?.body === 'string' ? init.body : '')),
      authorization: headers.get('authorization') ?? undefined,
      contentType: headers.get('content-type') ?? undefined,
    });
    return new Response(status === 204 ? null : JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
  });
  return { client, sent };
}

/** The official client, answered `body` with `status`, and what it would send (serialised as its RequestClient does). */
function officialClient(body: unknown = {}, status = 200) {
  const sent: WireRequest[] = [];
  const httpClient = {
    request: async (options: { method: string; uri: string; username: string; password: string; headers?: Record<string, string>; params?: Record<string, unknown>; data?: Record<string, unknown> }) => {
      const url = new URL(options.uri);
      sent.push({
        method: options.method.toUpperCase(),
        path: url.pathname,
        query: sorted(formOf(options.params)),
        form: sorted(formOf(options.data)),
        authorization: `Basic ${Buffer.from(`${options.username}:${options.password}`).toString('base64')}`,
        contentType: options.headers?.['Content-Type'],
      });
      return { statusCode: status, body: status === 204 ? '' : JSON.stringify(body), headers: {} };
    },
  };
  return { api: twilio(credentials.accountSid, credentials.authToken, { httpClient: httpClient as never }).api.v2010.accounts(credentials.accountSid), sent };
}

/** `qs.stringify(…, {arrayFormat: 'repeat'})`, which the official RequestClient sends. */
function formOf(fields: Record<string, unknown> | undefined): URLSearchParams {
  const form = new URLSearchParams();
  for (const [name, value] of Object.entries(fields ?? {})) {
    for (const item of Array.isArray(value) ? value : [value]) form.append(name, String(item));
  }
  return form;
}

const incomingNumber = { sid: `PN${'b'.repeat(32)}`, phone_number: '+14155550123', voice_application_sid: `AP${'c'.repeat(32)}`, trunk_sid: null };

describe("our Twilio number requests are the official client's", () => {
  it('search: AvailablePhoneNumbers/{Country}/Local|TollFree.json with the same filters', async () => {
    const searches: AvailableNumberSearch[] = [
      { country: 'US', type: 'local', areaCode: '415', contains: 'STORM', region: 'CA', postalCode: '94103', locality: 'San Francisco', size: 20 },
      { country: 'CA', type: 'toll_free', areaCode: '800', size: 5 },
      { country: 'US', type: 'local', nearNumber: '+14155550100', distance: 50, size: 1 },
    ];
    for (const search of searches) {
      // Act
      const ours = ourClient({ available_phone_numbers: [] });
      await ours.client.searchAvailableNumbers(credentials, search);
      const official = officialClient({ available_phone_numbers: [] });
      const list = official.api.availablePhoneNumbers(search.country);
      const filters = {
        areaCode: search.areaCode === undefined ? undefined : Number(search.areaCode),
        contains: search.contains,
        inRegion: search.region,
        inPostalCode: search.postalCode,
        inLocality: search.locality,
        nearNumber: search.nearNumber,
        distance: search.distance,
        voiceEnabled: true,
        pageSize: search.size,
      };
      const defined = Object.fromEntries(Object.entries(filters).filter(([, value]) => value !== undefined));
      await (search.type === 'local' ? list.local.page(defined) : list.tollFree.page(defined));

      // Assess
      expect(ours.sent).toEqual(official.sent);
    }
  });

  it('find: IncomingPhoneNumbers.json?PhoneNumber=', async () => {
    const ours = ourClient({ incoming_phone_numbers: [] });
    await ours.client.findNumber(credentials, '+14155550123');
    const official = officialClient({ incoming_phone_numbers: [] });
    await official.api.incomingPhoneNumbers.page({ phoneNumber: '+14155550123' });
    expect(ours.sent).toEqual(official.sent);
  });

  it('buy: POST IncomingPhoneNumbers.json with PhoneNumber or AreaCode and the routing, form-encoded', async () => {
    for (const wanted of [{ phoneNumber: '+14155550123' }, { areaCode: '415' }]) {
      const ours = ourClient(incomingNumber, 201);
      await ours.client.buyNumber(credentials, wanted, routing);
      const official = officialClient(incomingNumber, 201);
      await official.api.incomingPhoneNumbers.create({
        ...('phoneNumber' in wanted ? { phoneNumber: wanted.phoneNumber } : { areaCode: wanted.areaCode }),
        voiceUrl: routing.voiceUrl,
        voiceMethod: 'POST',
        statusCallback: routing.statusCallback,
        statusCallbackMethod: 'POST',
      });
      expect(ours.sent).toEqual(official.sent);
    }
  });

  it('route: POST IncomingPhoneNumbers/{Sid}.json, removing an application or a trunk that would override the voice URL', async () => {
    const numbers: CarrierNumber[] = [
      { sid: incomingNumber.sid, phoneNumber: incomingNumber.phone_number },
      { sid: incomingNumber.sid, phoneNumber: incomingNumber.phone_number, voiceApplicationSid: incomingNumber.voice_application_sid },
      { sid: incomingNumber.sid, phoneNumber: incomingNumber.phone_number, trunkSid: `TK${'d'.repeat(32)}` },
    ];
    for (const number of numbers) {
      const ours = ourClient(incomingNumber);
      await ours.client.routeNumber(credentials, number, routing);
      const official = officialClient(incomingNumber);
      await official.api.incomingPhoneNumbers(number.sid).update({
        voiceUrl: routing.voiceUrl,
        voiceMethod: 'POST',
        statusCallback: routing.statusCallback,
        statusCallbackMethod: 'POST',
        ...(number.voiceApplicationSid ? { voiceApplicationSid: '' } : {}),
        ...(number.trunkSid ? { trunkSid: '' } : {}),
      });
      expect(ours.sent).toEqual(official.sent);
    }
  });

  it('release: DELETE IncomingPhoneNumbers/{Sid}.json', async () => {
    const ours = ourClient(undefined, 204);
    await ours.client.releaseNumber(credentials, incomingNumber.sid);
    const official = officialClient(undefined, 204);
    await official.api.incomingPhoneNumbers(incomingNumber.sid).remove();
    expect(ours.sent).toEqual(official.sent);
  });

  it("records an inbound call with the TwiML the official builder writes for <Start><Recording>", () => {
    const callback = 'https://api.example.com/twilio/calls/org/session/recording';
    const reference = new twilio.twiml.VoiceResponse();
    reference.start().recording({ recordingStatusCallback: callback, recordingStatusCallbackEvent: ['completed'] });
    const ours = conversationRelayTwiml({ url: 'wss://relay.example.com', language: 'en-US', interruptible: true, welcomeGreetingInterruptible: true, dtmfDetection: true, recordingStatusCallback: callback });
    expect(ours).toContain(reference.toString().replace(/^<\?xml[^>]*>\s*<Response>/, '').replace(/<\/Response>$/, ''));
    expect(ours.indexOf('<Start>')).toBeLessThan(ours.indexOf('<Connect>'));
  });
});

describe("Twilio's documented answers, read by our client", () => {
  it('the AvailablePhoneNumbers example becomes a number for sale, capabilities in either spelling', async () => {
    const example = fixture('available-phone-numbers-local.json').example as { available_phone_numbers: Record<string, unknown>[] };
    const { client } = ourClient(example);
    const [number] = await client.searchAvailableNumbers(credentials, { country: 'US', type: 'local', size: 20 });
    expect(number).toEqual({
      phone_number: '+18089251571',
      friendly_name: '(808) 925-1571',
      iso_country: 'US',
      locality: 'Hilo',
      region: 'HI',
      postal_code: '96720',
      address_requirements: 'none',
      capabilities: { voice: true, sms: false, mms: true },
    });
    const liveSpelling = { available_phone_numbers: [{ ...example.available_phone_numbers[0], capabilities: { voice: true, SMS: true, MMS: false, fax: false } }] };
    const [live] = await ourClient(liveSpelling).client.searchAvailableNumbers(credentials, { country: 'US', type: 'local', size: 20 });
    expect(live?.capabilities).toEqual({ voice: true, sms: true, mms: false });
  });

  it('the IncomingPhoneNumbers example gives the number and its id; another number is not taken for it', async () => {
    const example = fixture('incoming-phone-numbers-read.json').example;
    expect(await ourClient(example).client.findNumber(credentials, '+18089255327')).toEqual({ sid: 'PNaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', phoneNumber: '+18089255327' });
    expect(await ourClient(example).client.findNumber(credentials, '+18089255320')).toBeUndefined();
  });

  it("error 21422 (number not available) is PHONE_NUMBER_UNAVAILABLE with Twilio's message", async () => {
    const { example, status } = fixture('error-21422-number-not-available.json');
    const buying = ourClient(example, status).client.buyNumber(credentials, { phoneNumber: '+18089251571' }, routing);
    await expect(buying).rejects.toBeInstanceOf(PhoneNumberUnavailableError);
    await expect(ourClient(example, status).client.buyNumber(credentials, { phoneNumber: '+18089251571' }, routing)).rejects.toThrow('PhoneNumber is not available (Twilio error 21422)');
  });
});

describe('the Twilio simulator, to the official client', () => {
  let simulator: TwilioSimulator;
  beforeAll(async () => {
    simulator = await startTwilioSimulator();
  });
  afterAll(() => simulator.stop());

  /** The official client over real HTTP, its requests for api.twilio.com sent to the simulator. */
  const officialAt = (account: { accountSid: string; authToken: string }, resourcesOf = account.accountSid) => {
    const http = new twilio.RequestClient();
    const httpClient = { request: (options: { uri: string }) => http.request({ ...options, uri: options.uri.replace('https://api.twilio.com', simulator.baseUrl) } as never) };
    return twilio(account.accountSid, account.authToken, { httpClient: httpClient as never }).api.v2010.accounts(resourcesOf);
  };
  const account = () => ({ accountSid: `AC${crypto.randomUUID().replaceAll('-', '')}`, authToken: crypto.randomUUID().replaceAll('-', '') });

  it('searches, buys, routes, reads and releases a number as the client expects of Twilio', async () => {
    // Prepare
    const owner = account();
    const api = officialAt(owner);

    // Act
    const [offered] = await api.availablePhoneNumbers('US').local.list({ areaCode: 415, voiceEnabled: true, limit: 1 });
    const bought = await api.incomingPhoneNumbers.create({ phoneNumber: offered!.phoneNumber, voiceUrl: 'https://example.com/voice' });
    const routed = await api.incomingPhoneNumbers(bought.sid).update({ voiceUrl: 'https://example.com/twilio/voice', statusCallback: 'https://example.com/twilio/voice/status' });
    const found = await api.incomingPhoneNumbers.list({ phoneNumber: offered!.phoneNumber });
    const removed = await api.incomingPhoneNumbers(bought.sid).remove();
    const afterwards = await api.incomingPhoneNumbers(bought.sid).fetch().catch((error: unknown) => error);

    // Assess
    expect(offered).toMatchObject({ locality: 'San Francisco', region: 'CA', isoCountry: 'US', addressRequirements: 'none' });
    expect(offered!.phoneNumber).toMatch(/^\+1415\d{7}$/);
    expect(bought).toMatchObject({ accountSid: owner.accountSid, phoneNumber: offered!.phoneNumber, voiceUrl: 'https://example.com/voice', voiceMethod: 'POST' });
    expect(bought.sid).toMatch(/^PN[0-9a-f]{32}$/);
    expect(bought.dateCreated).toBeInstanceOf(Date);
    expect(routed).toMatchObject({ voiceUrl: 'https://example.com/twilio/voice', statusCallback: 'https://example.com/twilio/voice/status', statusCallbackMethod: 'POST' });
    expect(found.map((number) => number.sid)).toEqual([bought.sid]);
    expect(removed).toBe(true);
    expect(afterwards).toMatchObject({ status: 404, code: 20404 });
  });

  it("answers Twilio's errors: a number no longer for sale (21422), an area code without numbers (21452), another account's number (20404), a wrong account (20003)", async () => {
    const [first, second] = [account(), account()];
    const [offered] = await officialAt(first).availablePhoneNumbers('US').local.list({ areaCode: 808, limit: 1 });
    const bought = await officialAt(second).incomingPhoneNumbers.create({ phoneNumber: offered!.phoneNumber });

    const taken = await officialAt(first).incomingPhoneNumbers.create({ phoneNumber: offered!.phoneNumber }).catch((error: unknown) => error);
    const soldOut = await officialAt(first).incomingPhoneNumbers.create({ areaCode: '533' }).catch((error: unknown) => error);
    const notYours = await officialAt(first).incomingPhoneNumbers(bought.sid).fetch().catch((error: unknown) => error);
    const wrongAccount = await officialAt(first, second.accountSid).incomingPhoneNumbers.list().catch((error: unknown) => error);

    expect(taken).toMatchObject({ status: 400, code: 21422, message: 'PhoneNumber is not available', moreInfo: 'https://www.twilio.com/docs/errors/21422' });
    expect(soldOut).toMatchObject({ status: 400, code: 21452 });
    expect(notYours).toMatchObject({ status: 404, code: 20404 });
    expect(wrongAccount).toMatchObject({ status: 401, code: 20003 });
  });
});
