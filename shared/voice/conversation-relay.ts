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

const escapeXml = (value: string): string =>
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
  const recording = settings.recordingStatusCallback
    ? `<Start><Recording recordingStatusCallback="${escapeXml(settings.recordingStatusCallback)}" recordingStatusCallbackEvent="completed"/></Start>`
    : '';
  return `<?xml version="1.0" encoding="UTF-8"?><Response>${recording}<Connect><ConversationRelay ${rendered}/></Connect></Response>`;
}

/** An inbound call we cannot take: the carrier says so and hangs up. */
export function rejectTwiml(): string {
  return '<?xml version="1.0" encoding="UTF-8"?><Response><Reject reason="rejected"/></Response>';
}
