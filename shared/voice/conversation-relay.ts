import * as z from 'zod';

/** A number of milliseconds, as a number or a numeric string (Twilio's pages show both); anything else is left out. */
const milliseconds = z.unknown().transform((value) => {
  const parsed = typeof value === 'string' && /^\s*\d+(\.\d+)?\s*$/.test(value) ? Number(value) : value;
  return typeof parsed === 'number' && Number.isFinite(parsed) && parsed >= 0 ? parsed : undefined;
});

/** A flag as a boolean or its string (`"true"`/`"false"`); absent or anything else, `fallback`. */
const flag = (fallback: boolean) => z.unknown().transform((value) => (value === true || value === 'true' ? true : value === false || value === 'false' ? false : fallback));

/**
 * ConversationRelay's messages to us (Twilio's "Getting messages from Twilio", kept as fixtures in
 * test/fixtures/twilio/). Unknown fields are ignored, and a field of another type than documented is read
 * leniently or left out: no message is dropped for a type detail (decision 346).
 */
export const relayInbound = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('setup'),
    callSid: z.string(),
    from: z.string().optional(),
    to: z.string().optional(),
    direction: z.string().optional(),
  }),
  z.object({ type: z.literal('prompt'), voicePrompt: z.string(), lang: z.string().optional().catch(undefined), last: flag(true) }),
  z.object({ type: z.literal('interrupt'), utteranceUntilInterrupt: z.string().catch(''), durationUntilInterruptMs: milliseconds }),
  z.object({ type: z.literal('dtmf'), digit: z.union([z.string().trim().length(1), z.number().int().min(0).max(9).transform(String)]) }),
  z.object({ type: z.literal('error'), description: z.string().optional().catch(undefined) }),
]);

export type RelayInbound = z.output<typeof relayInbound>;

/** What we send: text tokens (`last: true` closes a reply) and `end` (the session is over; the call is hung up next). */
export type RelayOutbound = { type: 'text'; token: string; last: boolean } | { type: 'end'; handoffData?: string };

export interface RelaySettings {
  url: string;
  language: string;
  /** Whether the callee's speech may cut the agent's: ConversationRelay's `interruptible`. */
  interruptible: boolean;
  welcomeGreeting?: string | undefined;
  welcomeGreetingInterruptible: boolean;
  /** Whether Twilio sends the caller's key presses (`dtmf` messages): off unless asked for. */
  dtmfDetection: boolean;
  /** The TTS provider as ConversationRelay names it (`Google`, `Amazon`, `ElevenLabs`, …) and its voice. */
  ttsProvider?: string | undefined;
  voice?: string | undefined;
  /** Records the call (`<Start><Recording>`) and tells this URL when the recording is ready. */
  recordingStatusCallback?: string | undefined;
}

export const escapeXml = (value: string): string =>
  value.replace(/[<>&"']/g, (character) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[character] as string);

/** The TwiML that connects a call to our WebSocket API: `<Connect><ConversationRelay …/></Connect>`, recording it first if asked. */
export function conversationRelayTwiml(settings: RelaySettings): string {
  const attributes: Record<string, string> = {
    url: settings.url,
    language: settings.language,
    interruptible: settings.interruptible ? 'any' : 'none',
    welcomeGreetingInterruptible: settings.welcomeGreetingInterruptible ? 'any' : 'none',
    dtmfDetection: settings.dtmfDetection ? 'true' : 'false',
    ...(settings.welcomeGreeting ? { welcomeGreeting: settings.welcomeGreeting } : {}),
    ...(settings.ttsProvider ? { ttsProvider: settings.ttsProvider } : {}),
    ...(settings.voice ? { voice: settings.voice } : {}),
  };
  const rendered = Object.entries(attributes)
    .map(([name, value]) => `${name}="${escapeXml(value)}"`)
    .join(' ');
  return `<?xml version="1.0" encoding="UTF-8"?><Response>${recordingTwiml(settings.recordingStatusCallback)}<Connect><ConversationRelay ${rendered}/></Connect></Response>`;
}

/** `<Start><Recording>` telling `statusCallback` when the recording is ready; nothing without one. */
export function recordingTwiml(statusCallback: string | undefined): string {
  return statusCallback ? `<Start><Recording recordingStatusCallback="${escapeXml(statusCallback)}" recordingStatusCallbackEvent="completed"/></Start>` : '';
}

/**
 * A transfer (the `<Connect>` action's answer once the relay ended with a transfer's `handoffData`): `<Dial>` the
 * destination from the call's own number. A warm transfer first tells the caller to hold, and gives the
 * destination's `<Number>` a `url` whose TwiML (the whisper) runs for the person who answers before the two are
 * connected; a cold one connects straight away.
 */
export function transferTwiml(transfer: { number: string; callerId: string; whisperUrl?: string | undefined; holdMessage?: string | undefined }): string {
  const hold = transfer.holdMessage ? `<Say>${escapeXml(transfer.holdMessage)}</Say>` : '';
  const whisper = transfer.whisperUrl ? ` url="${escapeXml(transfer.whisperUrl)}"` : '';
  return `<?xml version="1.0" encoding="UTF-8"?><Response>${hold}<Dial callerId="${escapeXml(transfer.callerId)}"><Number${whisper}>${escapeXml(transfer.number)}</Number></Dial></Response>`;
}

/** What the destination of a warm transfer hears before it is connected to the caller. */
export function whisperTwiml(text: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?><Response><Say>${escapeXml(text)}</Say></Response>`;
}

/** The `<Connect>` action when the relay is over and the call is too. */
export const hangupTwiml = '<?xml version="1.0" encoding="UTF-8"?><Response><Hangup/></Response>';

/** An inbound call we cannot take: the carrier says so and hangs up. */
export function rejectTwiml(): string {
  return '<?xml version="1.0" encoding="UTF-8"?><Response><Reject reason="rejected"/></Response>';
}
