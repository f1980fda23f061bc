import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import type { SpeechToText, TextToSpeech, TranscriptionStream } from '../../shared/speech/ports.ts';
import { twilioSignature } from '../../shared/voice/twilio-signature.ts';

/** The simulator's callee's mouth and ears: a TTS that says its lines, an STT that hears the agent. */
export interface CalleeSpeech {
  tts: TextToSpeech;
  voiceId: string;
  stt: SpeechToText;
}

/** 20 ms of μ-law 8 kHz: one frame of the line, as Twilio sends it. */
const frameBytes = 160;
const frameMs = 20;
/** μ-law's zero: silence on the line. */
const silenceByte = 0xff;
/** A reply is over once the agent has been quiet this long (line time) after speaking. */
const replyQuietMs = 1_000;

export interface StreamLineOptions {
  url: string;
  authToken: string;
  accountSid: string;
  callSid: string;
  /** The `<Parameter>`s of the `<Stream>`, sent in `start.customParameters`. */
  parameters: Record<string, string>;
  speech: CalleeSpeech;
  /** Each frame of the agent's audio as the callee's phone plays it (`npm run call` saves them). */
  onPlayed?(frame: Uint8Array): void;
  /** What the callee recognised of one reply of the agent, once it is over. */
  onHeard?(text: string): void;
  /** The stream ended from the worker's side (it closed the socket). */
  onClosed(): void;
}

type Playback = { audio: Buffer } | { mark: string };

/**
 * A call's bidirectional Media Stream as Twilio runs it, from the callee's side: the upgrade signed with the
 * account's token over the `<Stream url>`, `connected` then `start` (with the `<Parameter>`s), then a frame of the
 * callee's audio every 20 ms (its speech, or the line's silence) with `chunk` and `timestamp` counted in audio time.
 * The agent's `media` is played in order at the same pace, each `mark` echoed once the audio before it has played,
 * and `clear` drops what is not played yet (echoing its marks, as Twilio does). What is played is what the callee
 * hears: its recogniser transcribes it.
 */
export class StreamLine {
  readonly streamSid = `MZ${randomBytes(16).toString('hex')}`;
  /** What the callee recognised of each reply of the agent, in order. */
  readonly heard: string[] = [];
  private readonly socket: WebSocket;
  private readonly options: StreamLineOptions;
  private readonly ear: TranscriptionStream;
  private outgoing = Buffer.alloc(0);
  private readonly playback: Playback[] = [];
  private sequence = 0;
  private frames = 0;
  private startedAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private lastAgentAudioMs = -Infinity;
  /** Agent audio played since the callee last finished speaking, in ms. */
  private agentMsSinceLine = 0;
  private heardSoFar: string[] = [];
  private lineWaiters: (() => void)[] = [];
  private closed = false;
  private opened: Promise<void>;
  /** Resolves once the line is down and its recogniser has reported all it heard. */
  readonly heardAll: Promise<void>;

  constructor(options: StreamLineOptions) {
    this.options = options;
    this.socket = new WebSocket(options.url, { headers: { 'x-twilio-signature': twilioSignature(options.authToken, options.url) } });
    // A pause between the pieces of one reply is not its end: the ear ends an utterance only at the quiet after a reply.
    this.ear = options.speech.stt.open({ language: 'en-US', endpointingMs: replyQuietMs - 200 });
    this.heardAll = this.listen();
    this.opened = new Promise((resolveOpen) => {
      this.socket.once('open', () => {
        this.send({ event: 'connected', protocol: 'Call', version: '1.0.0' });
        this.send({
          event: 'start',
          sequenceNumber: String(++this.sequence),
          start: {
            accountSid: options.accountSid,
            streamSid: this.streamSid,
            callSid: options.callSid,
            tracks: ['inbound'],
            mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
            customParameters: options.parameters,
          },
          streamSid: this.streamSid,
        });
        this.startedAt = Date.now();
        this.timer = setInterval(() => this.tick(), frameMs);
        resolveOpen();
      });
    });
    this.socket.on('message', (data) => this.receive(data.toString()));
    this.socket.on('error', () => undefined);
    this.socket.on('close', () => {
      this.stopLine();
      options.onClosed();
    });
  }

  /** Line time: ms of audio since the stream started. */
  get lineMs(): number {
    return this.frames * frameMs;
  }

  /** Says `text`: its audio goes on the line after what the callee is saying already; resolves once it has all been sent. */
  async say(text: string): Promise<void> {
    const chunks: Uint8Array[] = [];
    for await (const chunk of this.options.speech.tts.synthesize(text, { voiceId: this.options.speech.voiceId, language: 'en-US' })) chunks.push(chunk);
    await this.play(Buffer.concat(chunks));
  }

  /** Sends telephone audio as the callee's speech; resolves once it has all been sent. */
  async play(audio: Uint8Array): Promise<void> {
    await this.opened;
    this.outgoing = Buffer.concat([this.outgoing, audio]);
    await this.until(() => this.outgoing.length === 0);
    this.agentMsSinceLine = 0;
  }

  dtmf(digit: string): void {
    this.agentMsSinceLine = 0;
    this.send({ event: 'dtmf', streamSid: this.streamSid, sequenceNumber: String(++this.sequence), dtmf: { track: 'inbound_track', digit } });
  }

  /** Resolves once the agent has spoken since the callee's last line and then been quiet for a second (or the stream ended). */
  replyHeard(): Promise<void> {
    return this.until(() => this.agentMsSinceLine > 0 && this.playback.length === 0 && this.lineMs - this.lastAgentAudioMs >= replyQuietMs);
  }

  /** Resolves once the callee has heard `ms` of the agent's audio since its last line. */
  heardFor(ms: number): Promise<void> {
    return this.until(() => this.agentMsSinceLine >= ms);
  }

  /** Resolves once the line has been quiet for a second of line time (before a first line: the welcome, if any, is over). */
  quiet(): Promise<void> {
    return this.until(() => this.playback.length === 0 && this.lineMs - Math.max(0, this.lastAgentAudioMs) >= replyQuietMs);
  }

  /** Twilio's end of the stream: `stop`, then the socket closes. */
  stop(): void {
    if (this.closed) return;
    this.send({ event: 'stop', sequenceNumber: String(++this.sequence), stop: { accountSid: this.options.accountSid, callSid: this.options.callSid }, streamSid: this.streamSid });
    this.socket.close(1000);
    this.stopLine();
  }

  terminate(): void {
    this.socket.terminate();
    this.stopLine();
  }

  private stopLine(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    // What was played up to the hang-up is still heard: the recogniser reports it, then ends.
    this.ear.end();
    this.wake();
  }

  private until(condition: () => boolean): Promise<void> {
    return new Promise((resolveWhen) => {
      const check = () => {
        if (this.closed || condition()) resolveWhen();
        else this.lineWaiters.push(check);
      };
      check();
    });
  }

  private wake(): void {
    const waiters = this.lineWaiters;
    this.lineWaiters = [];
    for (const check of waiters) check();
  }

  private send(message: object): void {
    if (this.socket.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(message));
  }

  /** The frames due by the wall clock: one of the callee's audio out and one of the agent's played, each 20 ms. */
  private tick(): void {
    const due = Math.floor((Date.now() - this.startedAt) / frameMs);
    while (this.frames < due && !this.closed) {
      const timestamp = this.lineMs;
      this.frames += 1;
      const frame = this.outgoing.length > 0 ? this.outgoing.subarray(0, frameBytes) : Buffer.alloc(frameBytes, silenceByte);
      this.outgoing = this.outgoing.subarray(Math.min(frameBytes, this.outgoing.length));
      const padded = frame.length === frameBytes ? frame : Buffer.concat([frame, Buffer.alloc(frameBytes - frame.length, silenceByte)]);
      this.send({
        event: 'media',
        sequenceNumber: String(++this.sequence),
        media: { track: 'inbound', chunk: String(this.frames), timestamp: String(timestamp), payload: padded.toString('base64') },
        streamSid: this.streamSid,
      });
      this.ear.write(this.playFrame());
    }
    this.wake();
  }

  /** The next 20 ms the callee's phone plays: the agent's audio, marks echoed as they are reached, or silence. */
  private playFrame(): Uint8Array {
    const frame = Buffer.alloc(frameBytes, silenceByte);
    let filled = 0;
    while (this.playback.length > 0) {
      const next = this.playback[0] as Playback;
      if ('mark' in next) {
        this.playback.shift();
        this.send({ event: 'mark', sequenceNumber: String(++this.sequence), streamSid: this.streamSid, mark: { name: next.mark } });
        continue;
      }
      if (filled === frameBytes) break;
      const take = Math.min(frameBytes - filled, next.audio.length);
      next.audio.copy(frame, filled, 0, take);
      filled += take;
      if (take === next.audio.length) this.playback.shift();
      else next.audio = next.audio.subarray(take);
    }
    if (filled > 0) {
      this.lastAgentAudioMs = this.lineMs;
      this.agentMsSinceLine += frameMs;
      this.options.onPlayed?.(frame);
    }
    return frame;
  }

  private receive(raw: string): void {
    let message: { event?: string; streamSid?: string; media?: { payload?: string }; mark?: { name?: string } };
    try {
      message = JSON.parse(raw);
    } catch {
      return;
    }
    // Twilio plays only what names its stream; a message of another shape is an error Twilio would report.
    if (message.streamSid !== this.streamSid) return;
    if (message.event === 'media' && typeof message.media?.payload === 'string') this.playback.push({ audio: Buffer.from(message.media.payload, 'base64') });
    else if (message.event === 'mark' && typeof message.mark?.name === 'string') this.playback.push({ mark: message.mark.name });
    else if (message.event === 'clear') {
      const dropped = this.playback.splice(0);
      for (const item of dropped) if ('mark' in item) this.send({ event: 'mark', sequenceNumber: String(++this.sequence), streamSid: this.streamSid, mark: { name: item.mark } });
    }
  }

  /** The callee's recogniser: what it makes of each reply, once the agent has gone quiet. */
  private async listen(): Promise<void> {
    for await (const event of this.ear.events) {
      if (event.type !== 'final') continue;
      if (event.text.trim()) this.heardSoFar.push(event.text.trim());
      if (!event.endOfTurn || this.heardSoFar.length === 0) continue;
      const text = this.heardSoFar.join(' ');
      this.heardSoFar = [];
      this.heard.push(text);
      this.options.onHeard?.(text);
    }
  }
}
