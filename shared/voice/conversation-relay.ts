import * as z from 'zod';

/** ConversationRelay's messages to us (Twilio's "Getting messages from Twilio"); unknown fields are ignored. */
export const relayInbound = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('setup'),
    callSid: z.string(),
    from: z.string().optional(),
    to: z.string().optional(),
    direction: z.string().optional(),
    customParameters: z.record(z.string(), z.string()).optional(),
  }),
  z.object({ type: z.literal('prompt'), voicePrompt: z.string(), lang: z.string().optional(), last: z.boolean().default(true) }),
  z.object({ type: z.literal('interrupt'), utteranceUntilInterrupt: z.string().default(''), durationUntilInterruptMs: z.number().optional() }),
  z.object({ type: z.literal('dtmf'), digit: z.string().min(1).max(1) }),
  z.object({ type: z.literal('error'), description: z.string().optional() }),
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
