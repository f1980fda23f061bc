import { logger } from '../platform/logger.ts';
import type { Agent } from '../agents/agent-schemas.ts';
import { outsideModelSetup } from '../conversations/turn.ts';
import type { SpeechToSpeechSession, TextToSpeech, TranscriptionStream } from '../speech/ports.ts';
import { SpeechToSpeechTurns, type TextModel } from './speech-to-speech-turns.ts';
import type { StreamInbound, StreamOutbound } from './media-streams.ts';
import type { CallSpeech, VoiceActivity } from './ports.ts';
import { claimMediaStream, converse, keyPressContent, recordInterruption, type CallRef, type ConversationDeps, type ReplyChannel } from './voice.ts';

export interface MediaCallDeps extends ConversationDeps {
  speech: CallSpeech;
}

/**
 * The transport of one conversation: what the worker sends, in Twilio's messages, and closing it (Twilio then runs
 * the `<Connect>` action). Twilio's stream is one; a browser's voice session (`browser-voice.ts`) is the other, and
 * it also shows the transcripts as they form.
 */
export interface StreamSink {
  send(message: StreamOutbound): void;
  close(): void;
  /** What each side said: the caller's as recognised, the agent's as the reply is written. */
  transcript?(speaker: 'user' | 'agent', text: string, final: boolean): void;
}

/**
 * When each step of a turn happened (ms of the wall clock), from the end of the caller's speech to the first byte of
 * the agent's audio: what `npm run bench -- voice-media` splits the voice-to-voice latency into.
 */
export interface TurnTiming {
  /** The caller's last audio of speech arrived. */
  speechEndedAt: number;
  /** End of turn decided (the detector's silence, or the provider's endpointing on the final). */
  endOfTurnAt: number;
  /** The final that closes the utterance arrived. */
  finalAt: number;
  /** The first piece of the reply was ready to speak (the turn's share). */
  firstPieceAt: number;
  /** The first audio of the reply was sent. */
  firstAudioAt: number;
}

/** The silence that ends a turn with `SILENCE` when the agent sets none. */
export const defaultEndOfTurnSilenceMs = 600;

/** A frame of telephone audio as Twilio sends it: 20 ms of μ-law 8 kHz. */
const frameBytes = 160;
const bytesPerMs = 8;

/** A speech-to-speech reply is marked every this much audio: how finely a barge-in knows what was played. */
const speechToSpeechMarkMs = 500;
/**
 * How fast a reply is spoken, in characters a ms (about 15 a second, 150 words a minute): a speech-to-speech reply's
 * audio is not cut into the pieces of its text, so what of its text was heard before a barge-in is estimated by it.
 */
const spokenCharsPerMs = 0.015;

/** A clause is cut off at a comma only once it is this long: shorter ones would be spoken choppily. */
const minClauseChars = 40;

/**
 * The end of the next speakable piece of `text` (a sentence, or a long enough clause), or -1: where the synthesis of
 * a reply can start before the reply is whole.
 */
export function speakableEnd(text: string): number {
  let end = -1;
  for (const match of text.matchAll(/[.!?;…]+["')\]]*\s|\n+|,\s/g)) {
    const cut = (match.index ?? 0) + match[0].length;
    if (match[0].startsWith(',') && cut < minClauseChars) continue;
    end = cut;
    break;
  }
  return end;
}

interface Piece {
  text: string;
  reply: SpokenReply;
  /** Set once synthesized and sent: the mark Twilio echoes once it has been played. */
  mark?: string;
  audioMs: number;
}

/** A reply (or the welcome) as spoken: what of it the caller heard, by the marks Twilio echoed. */
interface SpokenReply {
  stored: boolean;
  interruptible: boolean;
  /** The caller spoke over it: what the turn still writes of it is not said. */
  interrupted?: boolean;
  played: string;
  playedMs: number;
  firstAudio?: (at: number) => void;
}

/**
 * One call through the media worker (docs/voice.md#the-media-worker): Twilio's stream in, the caller's speech
 * transcribed and cut into turns, one turn of the turn engine per utterance (the relay's `converse`), the reply
 * synthesized piece by piece as its text streams and sent as `media` frames with a `mark` after each piece. When the
 * caller speaks over unplayed audio, the audio is cleared, the synthesis stopped, and the stored reply cut to what
 * was played (the relay's `recordInterruption`).
 */
export class MediaCall {
  private streamSid = '';
  private agent?: Agent;
  private stt?: TranscriptionStream;
  private voice?: { tts: TextToSpeech; voiceId: string; model?: string | undefined };
  private activity?: VoiceActivity;
  /** With `SILENCE`: the silence after speech that ends a turn. */
  private silenceMs = defaultEndOfTurnSilenceMs;
  /** Audio of the caller received so far, in ms: the clock of the STT's and the detector's times. */
  private heardMs = 0;
  private speechEndedMs = 0;
  private finals: string[] = [];
  /** `SILENCE` asked the STT for finals: the next final that ends a turn is this end of turn's. */
  private finalizeAskedAt: number | undefined;
  private readonly queue: Piece[] = [];
  private readonly unplayed = new Map<string, Piece>();
  private synthesis: AbortController | undefined;
  /** The piece being synthesized, before its audio is all sent. */
  private synthesizing: Piece | undefined;
  private speaking = false;
  private markCount = 0;
  private idleWaiters: (() => void)[] = [];
  private closed = false;
  /** An `sts` or `hybrid` call's speech-to-speech session, and its turns. */
  private speechToSpeech?: { session: SpeechToSpeechSession; turns: SpeechToSpeechTurns; textModel: TextModel | undefined };
  /** The speech-to-speech reply being played, its audio since its last mark; a new one begins after `response-done`. */
  private responding: Piece | undefined;
  /** The next reply of the session is the welcome message, spoken but not stored. */
  private welcoming = false;

  private readonly deps: MediaCallDeps;
  private readonly call: CallRef;
  private readonly sink: StreamSink;
  private readonly observe: { turn?(timing: TurnTiming): void };

  constructor(deps: MediaCallDeps, call: CallRef, sink: StreamSink, observe: { turn?(timing: TurnTiming): void } = {}) {
    this.deps = deps;
    this.call = call;
    this.sink = sink;
    this.observe = observe;
  }

  /** One message of Twilio's; the stream is closed when its `start` cannot be admitted. */
  async handle(message: StreamInbound): Promise<void> {
    if (this.closed) return;
    switch (message.event) {
      case 'start': {
        const { streamSid, customParameters } = message.start;
        return this.begin(streamSid, () => claimMediaStream(this.deps, this.call, streamSid, customParameters));
      }
      case 'media':
        return this.hear(Buffer.from(message.media.payload, 'base64'));
      case 'mark':
        return this.played(message.mark.name);
      case 'dtmf':
        // A speech-to-speech session takes audio only (docs/voice.md#speech-to-speech).
        if (this.speechToSpeech) return;
        // The turn runs beside the stream: the caller's audio keeps flowing to the recogniser meanwhile.
        void this.talk(keyPressContent(message.dtmf.digit), { source: 'dtmf', digit: message.dtmf.digit }, Date.now());
        return;
      case 'stop':
        return this.close();
      default:
        return;
    }
  }

  /** The stream is over (Twilio's `stop`, or the socket closed): the call's end comes from Twilio's callbacks. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.synthesis?.abort();
    this.stt?.close();
    this.speechToSpeech?.session.close();
    this.speechToSpeech?.turns.end();
    this.queue.length = 0;
    this.unplayed.clear();
    this.wakeIdle();
  }

  /**
   * The conversation starts once `claim` admits the connection (consuming its single-use token): its recogniser and
   * voice are opened and the welcome is spoken. A refused claim closes the transport unheard.
   */
  async begin(streamSid: string, claim: () => Promise<Agent>): Promise<void> {
    if (this.streamSid || this.closed) return;
    this.streamSid = streamSid;
    let agent: Agent;
    try {
      agent = await claim();
    } catch (error) {
      logger.warn('media stream refused', { ...this.call, error: error as Error });
      this.closed = true;
      this.sink.close();
      return;
    }
    this.agent = agent;
    if (agent.voicePipelineMode === 'sts' || agent.voicePipelineMode === 'hybrid') return this.beginSpeechToSpeech(agent);
    const endOfTurn = agent.voice?.endOfTurn ?? 'STT_ENDPOINTING';
    const silenceMs = agent.voice?.endOfTurnSilenceMs;
    let recogniser;
    try {
      [recogniser, this.voice] = await Promise.all([this.deps.speech.speechToText(this.call.orgId, agent), this.deps.speech.textToSpeech(this.call.orgId, agent)]);
    } catch (error) {
      // No speech, no conversation: Twilio runs the <Connect> action, and the call ends as CONNECTION_LOST.
      logger.error('media stream without speech: its provider cannot be used', { ...this.call, error: error as Error });
      this.close();
      this.sink.close();
      return;
    }
    this.stt = recogniser.stt.open({
      language: agent.language ?? 'en-US',
      model: recogniser.model,
      endpointingMs: endOfTurn === 'STT_ENDPOINTING' ? silenceMs : undefined,
    });
    if (endOfTurn === 'SILENCE') {
      this.silenceMs = silenceMs ?? defaultEndOfTurnSilenceMs;
      this.activity = this.deps.speech.voiceActivity(this.silenceMs);
    }
    void this.transcribe(this.stt);
    const welcome = agent.voice?.welcomeMessage;
    if (welcome) this.say(welcome, { stored: false, interruptible: agent.welcomeAllowInterruptions ?? true, played: '', playedMs: 0 });
  }

  /**
   * An `sts` or `hybrid` call: a session of the agent's speech-to-speech model, opened with its prompt and the tools
   * of its turns, hears the caller and speaks; its replies are turns of the engine (`SpeechToSpeechTurns`), one a
   * transcribed utterance. `hybrid` hands the turns that ask for a tool to the agent's text LLM.
   */
  private async beginSpeechToSpeech(agent: Agent): Promise<void> {
    let opened;
    try {
      const [speechToSpeech, setup, textModel] = await Promise.all([
        this.deps.speech.speechToSpeech(this.call.orgId, agent),
        outsideModelSetup(this.deps, this.call.orgId, this.call.sessionId),
        agent.voicePipelineMode === 'hybrid' ? this.deps.turnModel(this.call.orgId, agent.modelId) : undefined,
      ]);
      if (!speechToSpeech) throw new Error('the deployment has no speech-to-speech model');
      const session = speechToSpeech.sts.open({
        model: speechToSpeech.model.name,
        instructions: setup.instructions,
        language: agent.language ?? 'en-US',
        tools: setup.tools.map((tool) => ({ name: tool.name, description: tool.description ?? '', parameters: tool.inputSchema as Record<string, unknown> })),
      });
      opened = { session, turns: new SpeechToSpeechTurns(session, speechToSpeech.model), textModel };
    } catch (error) {
      logger.error('media stream without speech: its speech-to-speech model cannot be used', { ...this.call, error: error as Error });
      this.close();
      this.sink.close();
      return;
    }
    this.speechToSpeech = opened;
    void this.listenToSpeechToSpeech(opened.session, opened.turns);
    const welcome = agent.voice?.welcomeMessage;
    if (welcome) {
      this.welcoming = true;
      opened.session.say(welcome);
    }
    void this.takeSpeechToSpeechTurns(opened.turns, Boolean(welcome), opened.textModel);
  }

  /** The session's events: its audio is played as it comes, speech cuts the agent off, the rest makes the turns. */
  private async listenToSpeechToSpeech(session: SpeechToSpeechSession, turns: SpeechToSpeechTurns): Promise<void> {
    for await (const event of session.events) {
      if (event.type === 'audio') this.playResponse(event.audio);
      else if (event.type === 'speech-started') this.bargeIn();
      else if (event.type === 'error') logger.error('the speech-to-speech session failed', { ...this.call, message: event.message });
      else {
        if (event.type === 'response-done') this.endResponse();
        else if (event.type === 'assistant-transcript' && !event.final) this.sink.transcript?.('agent', event.text, false);
        turns.push(event);
      }
    }
    turns.end();
    // The session ended under a live call (its provider failed): the call cannot go on without it.
    if (!this.closed) {
      this.close();
      this.sink.close();
    }
  }

  /** Each utterance of the caller, in turn, as one turn of the engine whose model is the session. */
  private async takeSpeechToSpeechTurns(turns: SpeechToSpeechTurns, welcome: boolean, textModel: TextModel | undefined): Promise<void> {
    if (welcome) await turns.skipResponse();
    for (let said = await turns.nextUtterance(); said !== undefined && !this.closed; said = await turns.nextUtterance()) {
      this.sink.transcript?.('user', said, true);
      const turnModel = turns.turnModel(textModel);
      await this.talk(said || '(inaudible)', { source: 'voice' }, Date.now(), undefined, {
        model: { model: turnModel.model, languageModel: turnModel.languageModel },
        replyMetadata: () => ({ voice: turnModel.record() }),
      });
    }
  }

  /** Audio of the session's reply: sent as it comes, a mark every `speechToSpeechMarkMs` of it. */
  private playResponse(audio: Uint8Array): void {
    if (this.closed) return;
    if (!this.responding) {
      const reply: SpokenReply = this.welcoming
        ? { stored: false, interruptible: this.agent?.welcomeAllowInterruptions ?? true, played: '', playedMs: 0 }
        : { stored: true, interruptible: true, played: '', playedMs: 0 };
      this.responding = { text: '', reply, audioMs: 0 };
      this.speaking = true;
    }
    const piece = this.responding;
    // What is still on its way of a reply the caller spoke over is dropped.
    if (piece.reply.interrupted) return;
    for (let offset = 0; offset < audio.length; offset += frameBytes) this.sendAudio(audio.subarray(offset, offset + frameBytes));
    piece.audioMs += audio.length / bytesPerMs;
    if (piece.audioMs >= speechToSpeechMarkMs) this.markResponse(piece);
  }

  /** A mark after the reply's audio so far; the rest of the reply goes on in a new piece. */
  private markResponse(piece: Piece): void {
    if (piece.audioMs > 0 && !piece.reply.interrupted) {
      this.markCount += 1;
      piece.mark = `piece-${this.markCount}`;
      this.unplayed.set(piece.mark, piece);
      this.sink.send({ event: 'mark', streamSid: this.streamSid, mark: { name: piece.mark } });
    }
    this.responding = { text: '', reply: piece.reply, audioMs: 0 };
  }

  /** The session's reply is over: its last audio is marked, and the next audio begins another. */
  private endResponse(): void {
    if (this.responding) this.markResponse(this.responding);
    this.responding = undefined;
    this.welcoming = false;
    this.speaking = false;
    this.wakeIdle();
  }

  /** The caller's telephone audio (μ-law 8 kHz), as it arrives. */
  hear(audio: Uint8Array): void {
    if (this.speechToSpeech) {
      this.heardMs += audio.length / bytesPerMs;
      this.speechToSpeech.session.write(audio);
      return;
    }
    if (!this.stt) return;
    this.heardMs += audio.length / bytesPerMs;
    this.stt.write(audio);
    const activity = this.activity?.push(audio);
    if (activity === 'speech-started') this.bargeIn();
    else if (activity === 'silence' && this.finalizeAskedAt === undefined) {
      // The detector tells the silence once it has lasted the threshold: the speech ended that long ago.
      this.speechEndedMs = this.heardMs - this.silenceMs;
      this.finalizeAskedAt = Date.now();
      this.stt.finalize();
    }
  }

  /** The STT's events: speech cuts the agent off, and the finals up to an end of turn are one user message. */
  private async transcribe(stream: TranscriptionStream): Promise<void> {
    try {
      for await (const event of stream.events) {
        if (event.type === 'speech-started') {
          if (!this.activity) this.bargeIn();
        } else if (event.type === 'partial') {
          this.sink.transcript?.('user', [...this.finals, event.text.trim()].join(' '), false);
        } else if (event.type === 'final') {
          if (event.text.trim()) this.finals.push(event.text.trim());
          // With `SILENCE`, only the detector ends a turn; the provider's own endpointing does with `STT_ENDPOINTING`.
          if (!event.endOfTurn || (this.activity && this.finalizeAskedAt === undefined)) continue;
          const finalAt = Date.now();
          const speechEndedAt = finalAt - (this.heardMs - (this.activity ? this.speechEndedMs : event.endMs));
          const endOfTurnAt = this.finalizeAskedAt ?? finalAt;
          this.finalizeAskedAt = undefined;
          const said = this.finals.join(' ');
          this.finals = [];
          if (!said) continue;
          this.sink.transcript?.('user', said, true);
          void this.talk(said, { source: 'voice' }, speechEndedAt, { endOfTurnAt, finalAt });
        } else if (event.type === 'error') {
          logger.warn('the call stopped hearing: its speech-to-text failed', { ...this.call, message: event.message });
        }
      }
    } catch (error) {
      logger.warn('the call stopped hearing: its speech-to-text failed', { ...this.call, error: error as Error });
    }
  }

  /** One turn of the conversation, its reply spoken as it streams. */
  private async talk(
    content: string,
    metadata: Record<string, unknown>,
    speechEndedAt: number,
    heard?: { endOfTurnAt: number; finalAt: number },
    speechToSpeech?: Parameters<typeof converse>[5],
  ): Promise<void> {
    const reply: SpokenReply = { stored: true, interruptible: true, played: '', playedMs: 0 };
    let pending = '';
    let firstPieceAt: number | undefined;
    let ending = false;
    const piece = (text: string) => {
      firstPieceAt ??= Date.now();
      this.say(text, reply);
    };
    if (heard && this.observe.turn) {
      const report = this.observe.turn;
      reply.firstAudio = (firstAudioAt) => report({ speechEndedAt, ...heard, firstPieceAt: firstPieceAt ?? firstAudioAt, firstAudioAt });
    }
    let written = '';
    const channel: ReplyChannel = {
      delta: (text) => {
        written += text;
        this.sink.transcript?.('agent', written, false);
        // A speech-to-speech session speaks its replies itself.
        if (speechToSpeech) return;
        pending += text;
        for (let end = speakableEnd(pending); end > 0; end = speakableEnd(pending)) {
          piece(pending.slice(0, end));
          pending = pending.slice(end);
        }
      },
      complete: () => {
        if (pending.trim()) piece(pending);
        pending = '';
        this.sink.transcript?.('agent', written, true);
      },
      end: () => {
        ending = true;
      },
      settled: async () => {
        await this.idle();
        // Closing the stream hands the call to the `<Connect>` action: it hangs up, or dials a transfer.
        if (ending && !this.closed) {
          this.close();
          this.sink.close();
        }
      },
    };
    try {
      await converse(this.deps, this.call, content, metadata, channel, speechToSpeech);
    } catch (error) {
      logger.error('voice turn failed', { ...this.call, error: error as Error });
    }
  }

  /** Queues `text` to be spoken after what is queued already. */
  private say(text: string, reply: SpokenReply): void {
    if (this.closed || reply.interrupted) return;
    this.queue.push({ text, reply, audioMs: 0 });
    if (!this.speaking) void this.speak();
  }

  /** Synthesizes the queued pieces one after another, sending each one's audio as it comes and a mark after it. */
  private async speak(): Promise<void> {
    this.speaking = true;
    for (let next = this.queue.shift(); next && !this.closed; next = this.queue.shift()) {
      const piece = next;
      const synthesis = new AbortController();
      this.synthesis = synthesis;
      this.synthesizing = piece;
      const voice = this.voice as NonNullable<MediaCall['voice']>;
      let carry = Buffer.alloc(0);
      try {
        for await (const chunk of voice.tts.synthesize(piece.text, {
          voiceId: voice.voiceId,
          model: voice.model,
          language: this.agent?.language ?? 'en-US',
          signal: synthesis.signal,
        })) {
          if (synthesis.signal.aborted) break;
          if (piece.audioMs === 0) piece.reply.firstAudio?.(Date.now());
          carry = Buffer.concat([carry, chunk]);
          const whole = carry.length - (carry.length % frameBytes);
          for (let offset = 0; offset < whole; offset += frameBytes) this.sendAudio(carry.subarray(offset, offset + frameBytes));
          piece.audioMs += whole / bytesPerMs;
          carry = carry.subarray(whole);
        }
        if (carry.length > 0 && !synthesis.signal.aborted) {
          this.sendAudio(carry);
          piece.audioMs += carry.length / bytesPerMs;
        }
      } catch (error) {
        if (!synthesis.signal.aborted) logger.warn('a piece of the reply was not spoken: its synthesis failed', { ...this.call, error: error as Error });
      }
      this.synthesizing = undefined;
      if (synthesis.signal.aborted || this.closed) continue;
      this.markCount += 1;
      piece.mark = `piece-${this.markCount}`;
      this.unplayed.set(piece.mark, piece);
      this.sink.send({ event: 'mark', streamSid: this.streamSid, mark: { name: piece.mark } });
    }
    this.synthesis = undefined;
    this.speaking = false;
    this.wakeIdle();
  }

  private sendAudio(frame: Uint8Array): void {
    this.sink.send({ event: 'media', streamSid: this.streamSid, media: { payload: Buffer.from(frame).toString('base64') } });
  }

  /** Twilio played the audio up to a mark: its piece was heard. A mark of audio cleared is no longer awaited. */
  private played(name: string): void {
    const piece = this.unplayed.get(name);
    if (!piece) return;
    this.unplayed.delete(name);
    piece.reply.played += piece.text;
    piece.reply.playedMs += piece.audioMs;
    this.wakeIdle();
  }

  /**
   * The caller spoke: audio of an interruptible reply not yet played is cleared, its synthesis stopped, and a
   * stored reply is cut to what was heard. Twilio echoes the marks `clear` dropped; they no longer count.
   */
  private bargeIn(): void {
    const responding = this.responding?.audioMs ? [this.responding] : [];
    const pieces = [...this.unplayed.values(), ...(this.synthesizing ? [this.synthesizing] : []), ...responding, ...this.queue];
    const reply = pieces[0]?.reply;
    if (!reply?.interruptible) return;
    for (const piece of pieces) piece.reply.interrupted = true;
    this.sink.send({ event: 'clear', streamSid: this.streamSid });
    this.synthesis?.abort();
    this.speechToSpeech?.session.interrupt(reply.playedMs);
    this.queue.length = 0;
    this.unplayed.clear();
    this.wakeIdle();
    const heard = this.speechToSpeech ? heardFor(reply.playedMs) : reply.played;
    if (reply.stored) void recordInterruption(this.deps, this.call, heard, Math.round(reply.playedMs)).catch((error: unknown) => logger.warn('interruption not recorded', { ...this.call, error: error as Error }));
  }

  /** Resolves once nothing is queued, being synthesized, or unplayed. */
  private idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolveIdle) => this.idleWaiters.push(resolveIdle));
  }

  private isIdle(): boolean {
    return this.closed || (!this.speaking && this.queue.length === 0 && this.unplayed.size === 0);
  }

  private wakeIdle(): void {
    if (!this.isIdle()) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const wake of waiters) wake();
  }
}

/** What of a speech-to-speech reply `playedMs` of its audio said: its text to the last whole word spoken by then. */
function heardFor(playedMs: number): (reply: string) => string {
  return (reply) => {
    const chars = Math.round(playedMs * spokenCharsPerMs);
    if (chars >= reply.length) return reply;
    const wordEnd = reply.lastIndexOf(' ', chars);
    return wordEnd > 0 ? reply.slice(0, wordEnd) : '';
  };
}
