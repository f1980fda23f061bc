import { TelephonyCredentialsRejectedError, TelephonyUnavailableError } from '../platform/errors.ts';
import type { OutboundCallRequest, Telephony, TelephonyCredentials } from './ports.ts';
import type { TwilioCallStatus } from './voice-schemas.ts';

/** Twilio's REST API can answer slowly under load; a call start waits this long before it fails. */
const requestTimeoutMs = 10_000;

/**
 * The Twilio REST calls the platform makes, over `fetch` (the `twilio` package would add megabytes to each
 * bundle and its start-up; decision 121). `baseUrl` is `https://api.twilio.com` on AWS and the local simulator's
 * address locally: the same code talks to both.
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
  try {
    const parsed = JSON.parse(text) as { message?: unknown };
    return typeof parsed.message === 'string' ? parsed.message.slice(0, 300) : undefined;
  } catch {
    return undefined;
  }
}
