/** A send the Graph API refused or could not take; `retryable` says whether the same request may succeed later. */
export class WhatsappSendError extends Error {
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

/** Sending WhatsApp messages (the Graph API's `/messages` endpoint; `GraphApiMessaging`). */
export interface WhatsappMessaging {
  /** Sends one text message from the business number to the customer; Meta's message id (wamid). */
  sendText(request: { phoneNumberId: string; accessToken: string; to: WhatsappRecipient; body: string }): Promise<{ wamid: string }>;
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

/** Meta refuses a free-form message outside the 24-hour customer-service window with this code. */
export const windowClosedMetaCode = 131047;

const requestTimeoutMs = 10_000;

/**
 * The Graph API's `POST /{version}/{phone-number-id}/messages`, over `fetch`. `baseUrl` includes the version
 * (`https://graph.facebook.com/v23.0`) on AWS and is the local simulator's address locally: the same code talks
 * to both.
 */
export class GraphApiMessaging implements WhatsappMessaging {
  private readonly baseUrl: string;

  constructor(baseUrl: string) {
    this.baseUrl = baseUrl.replace(/\/$/, '');
  }

  async sendText(request: { phoneNumberId: string; accessToken: string; to: WhatsappRecipient; body: string }): Promise<{ wamid: string }> {
    let response: Response;
    try {
      response = await fetch(`${this.baseUrl}/${encodeURIComponent(request.phoneNumberId)}/messages`, {
        method: 'POST',
        headers: { authorization: `Bearer ${request.accessToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ messaging_product: 'whatsapp', recipient_type: 'individual', ...addressOf(request.to), type: 'text', text: { preview_url: false, body: request.body } }),
        signal: AbortSignal.timeout(requestTimeoutMs),
      });
    } catch (error) {
      throw new WhatsappSendError('WHATSAPP_UNAVAILABLE', `The Graph API could not be reached: ${(error as Error).message}`, true);
    }
    const text = await response.text();
    const parsed = parseJson(text) as { messages?: { id?: unknown }[]; error?: { code?: unknown; message?: unknown } } | undefined;
    const wamid = parsed?.messages?.[0]?.id;
    if (response.ok && typeof wamid === 'string') return { wamid };
    const metaCode = typeof parsed?.error?.code === 'number' ? parsed.error.code : undefined;
    const message = `The Graph API answered ${response.status}${metaCode !== undefined ? ` (code ${metaCode})` : ''}: ${String(parsed?.error?.message ?? text).slice(0, 300)}`;
    if (metaCode === windowClosedMetaCode) throw new WhatsappSendError('WHATSAPP_WINDOW_CLOSED', message, false);
    if (response.status === 401 || metaCode === 190) throw new WhatsappSendError('WHATSAPP_CREDENTIALS_REJECTED', message, false);
    const retryable = response.status >= 500 || response.status === 429 || (metaCode !== undefined && retryableMetaCodes.has(metaCode));
    throw new WhatsappSendError(retryable ? 'WHATSAPP_UNAVAILABLE' : 'WHATSAPP_SEND_REFUSED', message, retryable);
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
