import * as z from 'zod';
import { escapeXml, recordingTwiml } from './conversation-relay.ts';

/**
 * Twilio Media Streams, bidirectional (`<Connect><Stream>`): the messages Twilio sends the media worker and the ones
 * it sends back, as https://www.twilio.com/docs/voice/media-streams/websocket-messages documents them (kept as
 * fixtures in test/fixtures/twilio/media-streams-messages.json). Read leniently as ConversationRelay's are (decision
 * 346): unknown fields are ignored, and Twilio's numbers-as-strings (`sequenceNumber`, `chunk`, `timestamp`) are
 * read either way.
 */

/** A count Twilio sends as a string (`"5"`) and might send as a number; anything else is left out. */
const count = z.unknown().transform((value) => {
  const parsed = typeof value === 'string' && /^\s*\d+\s*$/.test(value) ? Number(value) : value;
  return typeof parsed === 'number' && Number.isFinite(parsed) && parsed >= 0 ? parsed : undefined;
});

export const streamInbound = z.discriminatedUnion('event', [
  z.object({ event: z.literal('connected'), protocol: z.string().optional().catch(undefined), version: z.string().optional().catch(undefined) }),
  z.object({
    event: z.literal('start'),
    streamSid: z.string().optional().catch(undefined),
    start: z.object({
      streamSid: z.string(),
      callSid: z.string(),
      accountSid: z.string().optional().catch(undefined),
      tracks: z.array(z.string()).optional().catch(undefined),
      /** The `<Parameter>`s of the `<Stream>`: here, which call this is and its single-use token. */
      customParameters: z.record(z.string(), z.string()).catch({}).default({}),
      mediaFormat: z
        .object({ encoding: z.string(), sampleRate: count, channels: count })
        .optional()
        .catch(undefined),
    }),
  }),
  z.object({
    event: z.literal('media'),
    media: z.object({
      payload: z.string(),
      track: z.string().optional().catch(undefined),
      chunk: count,
      /** ms of the stream's audio since it started. */
      timestamp: count,
    }),
  }),
  z.object({ event: z.literal('mark'), mark: z.object({ name: z.string() }) }),
  z.object({ event: z.literal('dtmf'), dtmf: z.object({ digit: z.union([z.string().trim().length(1), z.number().int().min(0).max(9).transform(String)]), track: z.string().optional().catch(undefined) }) }),
  z.object({ event: z.literal('stop'), stop: z.object({ callSid: z.string().optional().catch(undefined), accountSid: z.string().optional().catch(undefined) }).optional().catch(undefined) }),
]);

export type StreamInbound = z.output<typeof streamInbound>;

/**
 * What the worker sends: audio to play (`media`, base64 μ-law 8 kHz with no file header), a `mark` Twilio echoes
 * back once the audio sent before it has played, and `clear`, which drops the audio not yet played (and echoes the
 * marks it dropped).
 */
export type StreamOutbound =
  | { event: 'media'; streamSid: string; media: { payload: string } }
  | { event: 'mark'; streamSid: string; mark: { name: string } }
  | { event: 'clear'; streamSid: string };

/** An inbound message from its text, or undefined (with no throw) when it is not one Twilio documents. */
export function parseStreamMessage(raw: string): StreamInbound | undefined {
  try {
    const parsed = streamInbound.safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

export interface StreamSettings {
  /** The worker's `wss://…/media-stream`: Twilio takes no query string here, so the call travels in `parameters`. */
  url: string;
  parameters: Readonly<Record<string, string>>;
  /** Where Twilio asks what next once the stream ends with the call still up. */
  action: string;
  /** Records the call (`<Start><Recording>`) and tells this URL when the recording is ready. */
  recordingStatusCallback?: string | undefined;
}

/** `<Connect action><Stream url><Parameter …/></Stream></Connect>`: a bidirectional stream to the media worker. */
export function mediaStreamTwiml(settings: StreamSettings): string {
  const parameters = Object.entries(settings.parameters)
    .map(([name, value]) => `<Parameter name="${escapeXml(name)}" value="${escapeXml(value)}"/>`)
    .join('');
  return `<?xml version="1.0" encoding="UTF-8"?><Response>${recordingTwiml(settings.recordingStatusCallback)}<Connect action="${escapeXml(settings.action)}"><Stream url="${escapeXml(settings.url)}">${parameters}</Stream></Connect></Response>`;
}
