import type { WhatsappTemplate } from './whatsapp-schemas.ts';

/** A Graph API request refused or not taken; `retryable` says whether the same request may succeed later. */
export class GraphApiError extends Error {
  readonly code: string;
  readonly retryable: boolean;

  constructor(code: string, message: string, retryable: boolean) {
    super(message);
    this.code = code;
    this.retryable = retryable;
  }
}

/** Whom a message goes to: the customer's phone number when Meta shared it, their business-scoped user id otherwise. */
export interface WhatsappRecipient {
  waId?: string | undefined;
  userId?: string | undefined;
}

/** Meta's id of a message it accepted, and the WhatsApp id it resolved the recipient's number to (a send `to` a phone number). */
export interface SentMessage {
  wamid: string;
  waId?: string | undefined;
}

/** A customer's media file, as downloaded from Meta. */
export interface DownloadedMedia {
  body: Uint8Array;
  mimeType: string;
  /** As Meta gives it with the media's URL. */
  sha256: string;
}

/** The Graph API of the WhatsApp Cloud API (`GraphApiMessaging`). */
export interface WhatsappMessaging {
  /** Sends one text message from the business number to the customer; Meta's message id (wamid). */
  sendText(request: { phoneNumberId: string; accessToken: string; to: WhatsappRecipient; body: string }): Promise<SentMessage>;
  /** Sends an approved template (`type: "template"`), which Meta delivers whatever the customer-service window. */
  sendTemplate(request: { phoneNumberId: string; accessToken: string; to: WhatsappRecipient; template: WhatsappTemplate }): Promise<SentMessage>;
  /**
   * A customer's media: `GET /{media-id}` gives its URL (valid 5 minutes), then the URL gives its bytes, both with
   * the bearer token. Refused with `WHATSAPP_MEDIA_TOO_LARGE` past `maxBytes`, before or while downloading.
   */
  downloadMedia(request: { phoneNumberId: string; accessToken: string; mediaId: string; maxBytes: number }): Promise<DownloadedMedia>;
}

/**
 * The addressing fields of a `/messages` body, as Meta documents them: `to` with a phone number (Meta's advice when
 * there is one), `recipient` with a business-scoped user id for a user whose number is not shared.
 */
export function addressOf(recipient: WhatsappRecipient): { to: string } | { recipient: string } {
  if (recipient.waId) return { to: recipient.waId };
  if (recipient.userId) return { recipient: recipient.userId };
  throw new Error('A WhatsApp message needs a phone number or a business-scoped user id to go to.');
}

/** Meta's error codes a later attempt can get past: throttling and temporary unavailability. */
const retryableMetaCodes = new Set([4, 80007, 130429, 131000, 131016, 131048, 131056]);

/** Meta refuses a free-form message outside the 24-hour customer-service window with this code (in the answer or a `failed` status). */
export const windowClosedMetaCode = 131047;

/** Meta's template errors (132000–132069: unknown name or language, parameter count or format, paused, disabled…). */
const isTemplateError = (code: number | undefined): boolean => code !== undefined && code >= 132000 && code < 133000;

const requestTimeoutMs = 10_000;
/** A document may be 100 MB: its download gets longer than a JSON request (100 MB in 30 s is 27 Mbit/s). */
const downloadTimeoutMs = 30_000;

/**
 * The Graph API over `fetch`: `POST /{phone-number-id}/messages` (text and template messages), `GET /{media-id}` and
 * the media's URL. `baseUrl` includes the version (`https://graph.facebook.com/v23.0`) on AWS and is the local
 * simulator's address locally: the same code talks to both.
 */
export class GraphApiMessaging implements WhatsappMessaging {
  private readonly baseUrl: string;

  constructor(baseUrl: string) {
    this.baseUrl = baseUrl.replace(/\/$/, '');
  }

  sendText(request: { phoneNumberId: string; accessToken: string; to: WhatsappRecipient; body: string }): Promise<SentMessage> {
    return this.send(request, { type: 'text', text: { preview_url: false, body: request.body } });
  }

  sendTemplate(request: { phoneNumberId: string; accessToken: string; to: WhatsappRecipient; template: WhatsappTemplate }): Promise<SentMessage> {
    return this.send(request, { type: 'template', template: request.template });
  }

  async downloadMedia(request: { phoneNumberId: string; accessToken: string; mediaId: string; maxBytes: number }): Promise<DownloadedMedia> {
    const authorization = { authorization: `Bearer ${request.accessToken}` };
    // phone_number_id: Meta checks that the media belongs to this number.
    const lookup = `${this.baseUrl}/${encodeURIComponent(request.mediaId)}?phone_number_id=${encodeURIComponent(request.phoneNumberId)}`;
    const { response, parsed, text } = await this.call(lookup, { headers: authorization, signal: AbortSignal.timeout(requestTimeoutMs) });
    const media = parsed as { url?: unknown; mime_type?: unknown; sha256?: unknown; file_size?: unknown } | undefined;
    if (!response.ok || typeof media?.url !== 'string') throw failureOf(response, parsed, text, 'WHATSAPP_MEDIA_UNAVAILABLE');
    const announced = Number(media.file_size);
    if (Number.isFinite(announced) && announced > request.maxBytes) throw tooLarge(announced, request.maxBytes);
    let download: Response;
    try {
      download = await fetch(media.url, { headers: authorization, signal: AbortSignal.timeout(downloadTimeoutMs) });
    } catch (error) {
      throw new GraphApiError('WHATSAPP_UNAVAILABLE', `The media URL could not be reached: ${(error as Error).message}`, true);
    }
    if (!download.ok || !download.body) {
      const body = await download.text().catch(() => '');
      throw failureOf(download, parseJson(body), body, 'WHATSAPP_MEDIA_UNAVAILABLE');
    }
    const chunks: Uint8Array[] = [];
    let size = 0;
    for await (const chunk of download.body) {
      size += chunk.byteLength;
      // Leaving the loop cancels the download.
      if (size > request.maxBytes) throw tooLarge(size, request.maxBytes);
      chunks.push(chunk);
    }
    const mimeType = typeof media.mime_type === 'string' ? media.mime_type : (download.headers.get('content-type') ?? 'application/octet-stream');
    return { body: Buffer.concat(chunks), mimeType, sha256: typeof media.sha256 === 'string' ? media.sha256 : '' };
  }

  private async send(request: { phoneNumberId: string; accessToken: string; to: WhatsappRecipient }, message: Record<string, unknown>): Promise<SentMessage> {
    const { response, parsed, text } = await this.call(`${this.baseUrl}/${encodeURIComponent(request.phoneNumberId)}/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${request.accessToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ messaging_product: 'whatsapp', recipient_type: 'individual', ...addressOf(request.to), ...message }),
      signal: AbortSignal.timeout(requestTimeoutMs),
    });
    const answer = parsed as { messages?: { id?: unknown }[]; contacts?: { wa_id?: unknown }[] } | undefined;
    const wamid = answer?.messages?.[0]?.id;
    const waId = answer?.contacts?.[0]?.wa_id;
    if (response.ok && typeof wamid === 'string') return { wamid, ...(typeof waId === 'string' ? { waId } : {}) };
    throw failureOf(response, parsed, text, 'WHATSAPP_SEND_REFUSED');
  }

  private async call(url: string, init: RequestInit): Promise<{ response: Response; parsed: unknown; text: string }> {
    let response: Response;
    try {
      response = await fetch(url, init);
    } catch (error) {
      throw new GraphApiError('WHATSAPP_UNAVAILABLE', `The Graph API could not be reached: ${(error as Error).message}`, true);
    }
    const text = await response.text();
    return { response, parsed: parseJson(text), text };
  }
}

/**
 * A Graph API call retried with backoff (`WHATSAPP_SEND_RETRY_MS`, up to 20% jitter) while Meta answers that it may
 * succeed later; how many attempts it took. Its last failure is thrown as a `GraphApiError` with `attempts`.
 */
export async function withRetries<Result>(deps: { config: { WHATSAPP_SEND_RETRY_MS: number[] } }, call: () => Promise<Result>): Promise<Result & { attempts: number }> {
  const delays = deps.config.WHATSAPP_SEND_RETRY_MS;
  for (let attempt = 1; ; attempt += 1) {
    try {
      return { ...(await call()), attempts: attempt };
    } catch (error) {
      const failure = error instanceof GraphApiError ? error : new GraphApiError('WHATSAPP_SEND_FAILED', (error as Error).message, true);
      const delay = delays[attempt - 1];
      if (!failure.retryable || delay === undefined) throw Object.assign(failure, { attempts: attempt });
      await new Promise((resolve) => setTimeout(resolve, delay * (1 - Math.random() * 0.2)));
    }
  }
}

/** What an answer that is not a success means, from its status and Meta's error code; `refusal` names an outright refusal. */
function failureOf(response: Response, parsed: unknown, text: string, refusal: string): GraphApiError {
  const error = (parsed as { error?: { code?: unknown; message?: unknown; error_data?: { details?: unknown } } } | undefined)?.error;
  const metaCode = typeof error?.code === 'number' ? error.code : undefined;
  const details = typeof error?.error_data?.details === 'string' ? ` (${error.error_data.details})` : '';
  const message = `The Graph API answered ${response.status}${metaCode !== undefined ? ` (code ${metaCode})` : ''}: ${String(error?.message ?? text).slice(0, 300)}${details.slice(0, 300)}`;
  if (metaCode === windowClosedMetaCode) return new GraphApiError('WHATSAPP_WINDOW_CLOSED', message, false);
  if (response.status === 401 || metaCode === 190) return new GraphApiError('WHATSAPP_CREDENTIALS_REJECTED', message, false);
  if (isTemplateError(metaCode)) return new GraphApiError('WHATSAPP_TEMPLATE_REJECTED', message, false);
  const retryable = response.status >= 500 || response.status === 429 || (metaCode !== undefined && retryableMetaCodes.has(metaCode));
  return new GraphApiError(retryable ? 'WHATSAPP_UNAVAILABLE' : refusal, message, retryable);
}

function tooLarge(bytes: number, maxBytes: number): GraphApiError {
  return new GraphApiError('WHATSAPP_MEDIA_TOO_LARGE', `The media is ${bytes} bytes, more than the ${maxBytes} WhatsApp allows for its type.`, false);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
