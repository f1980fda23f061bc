import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import WebSocket, { WebSocketServer } from 'ws';
import { twilioSignature } from '../../shared/voice/twilio-signature.ts';
import { StreamLine, type CalleeSpeech } from './media-stream-line.ts';
import { phoneChannelPath, type PhoneEvent, type PhoneMessage } from './phone-channel.ts';
import { createNumberInventory, twilioError, type SimulatedNumber } from './twilio-numbers.ts';

/**
 * What a simulated callee does once it answers: each step says a line (a final `prompt`; spoken audio on a Media
 * Stream), presses a key (`dtmf`), or interrupts the agent's next reply: after some of its tokens (`interrupt`) on
 * ConversationRelay, after hearing some ms of it on a Media Stream (its line spoken over the agent); then it hangs
 * up or stays on.
 */
export interface CalleeScript {
  steps: CalleeStep[];
  /** After the last step: hang up (default), or stay silent on the line until the agent or the time limit ends it. */
  then?: 'hangup' | 'stay';
}

export type CalleeStep = { say: string } | { dtmf: string } | { say: string; interruptAfterTokens: number } | { say: string; interruptAfterMs: number };

/** How a destination number of the test range behaves (docs/voice.md#simulator). */
export type CalleeBehaviour = 'answer' | 'stay' | 'busy' | 'no-answer' | 'failed' | 'carrier-silent';

/**
 * NANP keeps 555-0100 to 555-0199 for fiction: `+15550100`–`+15550149` answer, `…50`–`…59` answer and stay on the
 * line, `…60`–`…69` are busy, `…70`–`…79` do not answer, `…80`–`…89` fail, `…90`–`…99` answer and then the carrier
 * reports nothing more (not even the end of the call). The same with an area code (`+1 212 555 0160` is busy), so
 * that callees can live in different time zones and an organization can hold more than 100 of them.
 */
export function behaviourOf(number: string): CalleeBehaviour | undefined {
  const match = /^\+1(?:[2-9]\d\d)?5550(1\d\d)$/.exec(number);
  if (!match) return undefined;
  const n = Number(match[1]);
  if (n < 150) return 'answer';
  if (n < 160) return 'stay';
  if (n < 170) return 'busy';
  if (n < 180) return 'no-answer';
  if (n < 190) return 'failed';
  return 'carrier-silent';
}

const defaultScript: CalleeScript = { steps: [{ say: 'Hello?' }, { say: 'Thank you, goodbye.' }], then: 'hangup' };
/** The `stay` numbers: one word, then silence until the agent or the time limit ends the call. */
const silentScript: CalleeScript = { steps: [{ say: 'Hello?' }], then: 'stay' };

/** A request the simulator made to the platform, kept so that tests can replay it (Twilio retries callbacks). */
export interface SentCallback {
  url: string;
  params: Record<string, string>;
  signature: string;
  status: number;
  /** When it was sent (epoch ms). */
  at: number;
}

interface SimulatedCall {
  sid: string;
  accountSid: string;
  authToken: string;
  from: string;
  to: string;
  direction: 'outbound-api' | 'inbound';
  status: string;
  statusCallback?: string | undefined;
  recordingCallback?: string | undefined;
  timeLimitSeconds: number;
  relayUrl?: string | undefined;
  /** A `<Connect><Stream>`'s URL and `<Parameter>`s: the call's audio goes to a Media Stream. */
  streamUrl?: string | undefined;
  streamParameters?: Record<string, string>;
  line?: StreamLine | undefined;
  actionUrl?: string | undefined;
  /** What the TwiML's `<ConversationRelay>` turned on: key presses are sent only then, partial prompts only then. */
  dtmfDetection?: boolean;
  partialPrompts?: boolean;
  /** The TwiML the call runs (given at creation, or answered by the voice webhook). */
  twiml?: string | undefined;
  answeredAt?: number | undefined;
  sequence: number;
  socket?: WebSocket | undefined;
  timer?: NodeJS.Timeout | undefined;
  finished: boolean;
  relayEndReported?: boolean;
  /** How the recording was started: the call's REST request (`OutboundAPI`) or its TwiML's `<Start><Recording>`. */
  recordingSource?: 'OutboundAPI' | 'StartCallRecordingTwiML';
  /** A carrier that loses every report after the answer (the backstop's case). */
  silent?: boolean;
  /** What the callee heard: each reply's tokens joined, and the replies in order. */
  heard: string[];
  /** The `handoffData` of the relay's `end` message, passed to the `<Connect>` action as `HandoffData`. */
  handoffData?: string | undefined;
  /** The `<Dial>`s the call ran after its relay (transfers). */
  dials: SimulatedDial[];
}

/** A `<Dial><Number>` a call ran, as the simulator played it. */
export interface SimulatedDial {
  number: string;
  callerId: string | undefined;
  /** The `<Say>`s the caller heard before the dial (a hold message). */
  callerHeard: string[];
  /** The `<Say>`s of the `<Number url>` TwiML, heard by the person who answered before being connected. */
  whisper: string[];
  /** `answered` (then connected), or why not: `busy`, `no-answer`, `failed`. */
  outcome: 'answered' | 'busy' | 'no-answer' | 'failed';
}

export interface TwilioSimulator {
  baseUrl: string;
  port: number;
  /** Overrides the default script of a destination number. */
  setScript(number: string, script: CalleeScript): void;
  /** A callee driven from outside (`npm run call`): lines in, the agent's tokens out. */
  attachCallee(number: string, callee: InteractiveCallee): void;
  /**
   * A person's phone at `number`, over a WebSocket (`npm run call`, the playground): it answers calls to the number,
   * or dials a number of an account here (see `PhoneMessage`).
   */
  connectPhone(channel: WebSocket, number: string): void;
  /**
   * Someone dials `to`, a number of an account here: Twilio asks the number's voice URL (signed with the account's
   * token) what to do, and tells its status callback when the call ends.
   */
  dialIn(options: { from: string; to: string; script?: CalleeScript }): Promise<string>;
  /** A number an account has already (bought in Twilio's console, or ported in): it answers Twilio's demo until routed. */
  addIncomingNumber(options: { accountSid: string; authToken: string; phoneNumber: string; voiceApplicationSid?: string; trunkSid?: string }): SimulatedNumber;
  /** The number as Twilio keeps it (its voice URL, status callback, …), in whichever account has it; undefined once released. */
  incomingNumber(phoneNumber: string): SimulatedNumber | undefined;
  callbacks: SentCallback[];
  /** The replies each call's callee heard, by call SID (on a Media Stream: what its recogniser made of them). */
  heard(callSid: string): string[];
  /**
   * All a Media Stream call's callee heard, once its line is down (the call over) and its recogniser done. A busy
   * machine may pause a reply long enough for the callee to hear it as two utterances: compare words, not counts.
   */
  heardWhole(callSid: string): Promise<string[]>;
  /** The TwiML a call ran, by call SID. */
  twimlOf(callSid: string): string | undefined;
  /** The `<Dial>`s a call ran after its relay ended (transfers), by call SID, each once it is over. */
  dials(callSid: string): SimulatedDial[];
  /** Sends a message, as given, on a call's live ConversationRelay socket (contract tests send Twilio's own examples). */
  sendToRelay(callSid: string, message: string): void;
  /** Recordings by recording SID: the audio, its call, and whether the platform deleted it. */
  recordings: Map<string, { callSid: string; audio: Buffer; deleted: boolean }>;
  /** Every outbound call created, in order: the carrier's own record of what was dialled. */
  outboundCalls(): { sid: string; to: string; createdAt: number }[];
  /** Outbound calls created and not yet over: now, and the most at once since the last `resetPeak`. */
  liveCalls: { current(): number; peak(): number; resetPeak(): void };
  stop(): Promise<void>;
}

export interface InteractiveCallee {
  /** The agent's tokens, as they arrive; `last` closes a reply (on a Media Stream: each reply heard, whole). */
  onToken(token: string, last: boolean): void;
  onEnd(reason: string): void;
  /**
   * Called once connected, with a function that says a line (or `null` to hang up) and, on a Media Stream, one that
   * plays telephone audio as the callee's speech.
   */
  onConnected(say: (line: string | null) => void, play?: (audio: Uint8Array) => void): void;
  /** On a Media Stream: each 20 ms of the agent's audio as the phone plays it. */
  onAudio?(frame: Uint8Array): void;
}

/**
 * A local Twilio that speaks Twilio's wire protocol: the REST calls the platform makes (create a call, hang it
 * up), status callbacks signed with the account's auth token, the `<Connect>` action, and ConversationRelay's
 * WebSocket protocol (`setup`, `prompt`, `interrupt`, `dtmf` out; `text`, `end` in) against the relay URL of the
 * call's TwiML. Any account SID is accepted; each call's callbacks are signed with the token it was created with.
 * No more forgiving than Twilio: inline TwiML over 4,000 characters is refused (error 32018), a key press reaches
 * the relay only when the TwiML set `dtmfDetection="true"`, partial prompts (`last: false`) come only with
 * `partialPrompts="true"`, and an interrupt's duration is a string, as Twilio's page shows it.
 * Its phone numbers (search, buy, route, release) are `twilio-numbers.ts`. A `<Connect><Stream>` runs a bidirectional
 * Media Stream (`media-stream-line.ts`): the callee speaks its lines as audio (`speech`: its TTS) and hears the
 * agent's (`speech`: its STT).
 */
export async function startTwilioSimulator(options: { host?: string; port?: number; ringMs?: number; speech?: CalleeSpeech | undefined } = {}): Promise<TwilioSimulator> {
  const host = options.host ?? '127.0.0.1';
  const ringMs = options.ringMs ?? 200;
  const calls = new Map<string, SimulatedCall>();
  const scripts = new Map<string, CalleeScript>();
  const callees = new Map<string, InteractiveCallee>();
  const callbacks: SentCallback[] = [];
  const recordings = new Map<string, { callSid: string; accountSid: string; audio: Buffer; deleted: boolean }>();
  const created: { sid: string; to: string; createdAt: number }[] = [];
  const numbers = createNumberInventory();
  let live = 0;
  let peak = 0;

  const post = async (call: SimulatedCall, url: string, params: Record<string, string>): Promise<string> => {
    const signature = twilioSignature(call.authToken, url, params);
    const at = Date.now();
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': signature, 'i-twilio-idempotency-token': randomBytes(8).toString('hex') },
        body: new URLSearchParams(params).toString(),
      });
      const text = await response.text();
      callbacks.push({ url, params, signature, status: response.status, at });
      return text;
    } catch {
      callbacks.push({ url, params, signature, status: 0, at });
      return '';
    }
  };

  const baseParams = (call: SimulatedCall): Record<string, string> => ({
    AccountSid: call.accountSid,
    ApiVersion: '2010-04-01',
    CallSid: call.sid,
    CallStatus: call.status,
    Direction: call.direction,
    From: call.from,
    To: call.to,
  });

  const report = async (call: SimulatedCall, status: string) => {
    call.status = status;
    if (!call.statusCallback || call.silent) return;
    // A number's status callback hears only the end of an inbound call.
    if (call.direction === 'inbound' && !finalStatuses.includes(status)) return;
    call.sequence += 1;
    const params = { ...baseParams(call), CallbackSource: 'call-progress-events', SequenceNumber: String(call.sequence), Timestamp: new Date().toUTCString() };
    if (finalStatuses.includes(status)) {
      const duration = call.answeredAt ? Math.round((Date.now() - call.answeredAt) / 1000) : 0;
      Object.assign(params, { CallDuration: String(duration), Duration: String(Math.ceil(duration / 60)) });
    }
    await post(call, call.statusCallback, params);
  };

  const finish = async (call: SimulatedCall, status: string) => {
    if (call.finished) return;
    call.finished = true;
    if (call.direction === 'outbound-api') live -= 1;
    callees.get(call.direction === 'inbound' ? call.from : call.to)?.onEnd(`call ${status}`);
    clearTimeout(call.timer);
    const relayWasUp = call.socket?.readyState === WebSocket.OPEN || (call.line !== undefined && !call.relayEndReported);
    if (relayWasUp) call.socket?.close(1000);
    call.line?.stop();
    await report(call, status);
    if (call.recordingCallback && call.answeredAt && !call.silent) setTimeout(() => void recordingReady(call), 50).unref();
    // A call that ends under a live relay still ends the relay: the <Connect> action hears of it.
    if (relayWasUp && call.actionUrl && !call.relayEndReported && !call.silent) {
      call.relayEndReported = true;
      await post(call, call.actionUrl, { ...baseParams(call), SessionStatus: 'ended' });
    }
  };

  /** A recorded call's recording is ready some moments after the call: an MP3-looking file and its callback. */
  const recordingReady = async (call: SimulatedCall) => {
    const sid = `RE${randomBytes(16).toString('hex')}`;
    const duration = Math.round((Date.now() - (call.answeredAt as number)) / 1000);
    recordings.set(sid, { callSid: call.sid, accountSid: call.accountSid, audio: Buffer.concat([Buffer.from('ID3'), randomBytes(256)]), deleted: false });
    await post(call, call.recordingCallback as string, {
      AccountSid: call.accountSid,
      CallSid: call.sid,
      RecordingSid: sid,
      RecordingUrl: `http://${host}:${port}/2010-04-01/Accounts/${call.accountSid}/Recordings/${sid}`,
      RecordingStatus: 'completed',
      RecordingDuration: String(duration),
      RecordingChannels: '1',
      RecordingSource: call.recordingSource ?? 'OutboundAPI',
    });
  };

  /**
   * The relay ended with the call up: Twilio asks the `<Connect>` action what next (with the `handoffData` of the
   * relay's `end` message as `HandoffData`), hangs up on `<Hangup/>`, and runs a `<Dial>`.
   */
  const relayEnded = async (call: SimulatedCall) => {
    if (call.finished || call.relayEndReported || call.silent) return;
    call.relayEndReported = true;
    const handoff: Record<string, string> = call.handoffData === undefined ? {} : { HandoffData: call.handoffData };
    const twiml = call.actionUrl ? await post(call, call.actionUrl, { ...baseParams(call), SessionStatus: 'ended', ...handoff }) : '';
    if (/<Dial\b/.test(twiml)) await dial(call, twiml);
    else if (!call.actionUrl || /<Hangup\s*\/>/.test(twiml)) await finish(call, 'completed');
  };

  /**
   * `<Dial><Number>` from a live call: the caller hears the `<Say>`s before it, then ringing; the number behaves as
   * the test range says. The caller ID must be a number of the call's account, as Twilio requires. When the number
   * answers, a `<Number url>` is requested (signed, with the new leg's `CallSid` and its `ParentCallSid`) and its
   * TwiML plays to that person only, before the two are connected; Twilio allows no `<Dial>` in it. The connected
   * parties then talk until the destination hangs up, and the document, having no more verbs, ends the call.
   */
  const dial = async (call: SimulatedCall, twiml: string) => {
    const number = /<Number\b[^>]*>([^<]*)<\/Number>/.exec(twiml)?.[1]?.trim() ?? '';
    const callerId = attribute(twiml, 'Dial', 'callerId');
    const record: SimulatedDial = { number, callerId, callerHeard: saysOf(twiml.slice(0, twiml.indexOf('<Dial'))), whisper: [], outcome: 'failed' };
    const ownNumber = callerId ? numbers.byPhoneNumber(callerId)?.accountSid === call.accountSid : false;
    const behaviour = ownNumber ? (callees.has(number) ? 'answer' : (behaviourOf(number) ?? 'failed')) : 'failed';
    if (behaviour !== 'failed') await new Promise((resolveRing) => setTimeout(resolveRing, ringMs));
    if (behaviour === 'busy' || behaviour === 'no-answer' || behaviour === 'failed') record.outcome = behaviour;
    else {
      record.outcome = 'answered';
      const url = attribute(twiml, 'Number', 'url');
      if (url) {
        const leg = { AccountSid: call.accountSid, ApiVersion: '2010-04-01', CallSid: `CA${randomBytes(16).toString('hex')}`, ParentCallSid: call.sid, CallStatus: 'in-progress', Direction: 'outbound-dial', From: callerId as string, To: number };
        const whisper = await post(call, url, leg);
        if (!/<Dial\b/.test(whisper)) record.whisper = saysOf(whisper);
      }
      await new Promise((resolveTalk) => setTimeout(resolveTalk, ringMs));
    }
    // Shown once played whole, so that a reader never sees a dial half done.
    call.dials.push(record);
    await finish(call, 'completed');
  };

  const converse = (call: SimulatedCall, script: CalleeScript) => {
    const signature = twilioSignature(call.authToken, call.relayUrl as string);
    const socket = new WebSocket(call.relayUrl as string, { headers: { 'x-twilio-signature': signature } });
    call.socket = socket;
    const callee = callees.get(call.direction === 'inbound' ? call.from : call.to);
    let reply = '';
    let tokensThisReply = 0;
    let interruptAfter: number | undefined;
    let replyDone: (() => void) | undefined;
    const send = (message: Record<string, unknown>) => {
      if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message));
    };
    /** What the callee says: with `partialPrompts`, the words so far as they are recognised, then the whole. */
    const say = (line: string) => {
      if (call.partialPrompts) {
        const words = line.split(' ');
        for (let count = 1; count < words.length; count += 1) send({ type: 'prompt', voicePrompt: words.slice(0, count).join(' '), lang: 'en-US', last: false });
      }
      send({ type: 'prompt', voicePrompt: line, lang: 'en-US', last: true });
    };
    const waitForReply = () =>
      new Promise<void>((resolveReply) => {
        replyDone = resolveReply;
      });
    socket.on('message', (data) => {
      const message = JSON.parse(data.toString()) as { type: string; token?: string; last?: boolean; handoffData?: unknown };
      if (message.type === 'text') {
        callee?.onToken(message.token ?? '', message.last === true);
        if (interruptAfter !== undefined && tokensThisReply >= interruptAfter) {
          if (message.last) finishReply();
          return;
        }
        reply += message.token ?? '';
        tokensThisReply += 1;
        if (interruptAfter !== undefined && tokensThisReply >= interruptAfter) {
          // The callee talks over the agent: the relay reports what had been spoken so far.
          send({ type: 'interrupt', utteranceUntilInterrupt: reply, durationUntilInterruptMs: '400' });
        }
        if (message.last) finishReply();
      } else if (message.type === 'end') {
        if (typeof message.handoffData === 'string') call.handoffData = message.handoffData;
        callee?.onEnd('agent ended the call');
        socket.close(1000);
      }
    });
    const finishReply = () => {
      call.heard.push(reply);
      reply = '';
      tokensThisReply = 0;
      interruptAfter = undefined;
      replyDone?.();
    };
    socket.on('close', () => {
      replyDone?.();
      void relayEnded(call);
    });
    socket.on('error', () => undefined);
    socket.on('open', async () => {
      send({
        type: 'setup',
        sessionId: `VX${randomBytes(16).toString('hex')}`,
        accountSid: call.accountSid,
        callSid: call.sid,
        from: call.from,
        to: call.to,
        direction: call.direction === 'inbound' ? 'inbound' : 'outbound-api',
        callType: 'PSTN',
        callStatus: 'IN-PROGRESS',
        customParameters: {},
      });
      if (callee) {
        callee.onConnected((line) => {
          if (line === null) void finish(call, 'completed');
          else say(line);
        });
        return;
      }
      for (const step of script.steps) {
        if (call.finished || socket.readyState !== WebSocket.OPEN) return;
        // A key pressed on a call without DTMF detection reaches nobody: Twilio sends nothing, and nothing answers.
        if ('dtmf' in step && !call.dtmfDetection) continue;
        const replied = waitForReply();
        if ('dtmf' in step) send({ type: 'dtmf', digit: step.dtmf });
        else {
          if ('interruptAfterTokens' in step) interruptAfter = step.interruptAfterTokens;
          say(step.say);
        }
        await replied;
      }
      if ((script.then ?? 'hangup') === 'hangup') await finish(call, 'completed');
    });
  };

  const answer = async (call: SimulatedCall, script: CalleeScript) => {
    call.answeredAt = Date.now();
    await report(call, 'in-progress');
    // TimeLimit counts from the answer; the carrier itself ends the call then.
    if (call.timeLimitSeconds > 0) call.timer = setTimeout(() => void finish(call, 'completed'), call.timeLimitSeconds * 1000);
    if (call.relayUrl) converse(call, script);
    else if (call.streamUrl) stream(call, script);
  };

  /**
   * A `<Connect><Stream>`: the callee's side of a bidirectional Media Stream. Each step waits for the line to be quiet
   * (the welcome over) or for the agent's reply to the previous one, then speaks (or presses a key); a barge-in
   * speaks once the callee has heard `interruptAfterMs` of the reply. The stream closed by the worker ends the
   * `<Connect>`, as a relay's end does.
   */
  const stream = (call: SimulatedCall, script: CalleeScript) => {
    if (!options.speech) throw new Error('a Media Stream needs the callee to speak and hear: start the simulator with `speech`');
    const callee = callees.get(call.direction === 'inbound' ? call.from : call.to);
    // Twilio takes no query string in a `<Stream url>` (the call's data goes in `<Parameter>`s): the stream fails.
    if (call.streamUrl?.includes('?')) {
      void finish(call, 'failed');
      return;
    }
    const line = new StreamLine({
      url: call.streamUrl as string,
      authToken: call.authToken,
      accountSid: call.accountSid,
      callSid: call.sid,
      parameters: call.streamParameters ?? {},
      speech: options.speech,
      onPlayed: (frame) => callee?.onAudio?.(frame),
      onHeard: (text) => {
        call.heard.push(text);
        callee?.onToken(text, true);
      },
      onClosed: () => void relayEnded(call),
    });
    call.line = line;
    if (callee) {
      callee.onConnected(
        (said) => {
          if (said === null) void finish(call, 'completed');
          else void line.say(said);
        },
        (audio) => void line.play(audio),
      );
      return;
    }
    void (async () => {
      await line.quiet();
      for (const [index, step] of script.steps.entries()) {
        if (call.finished) return;
        if ('dtmf' in step) line.dtmf(step.dtmf);
        else {
          if ('interruptAfterMs' in step) await line.heardFor(step.interruptAfterMs);
          await line.say(step.say);
        }
        // A barge-in next speaks over this step's reply rather than after it.
        const next = script.steps[index + 1];
        if (!next || !('interruptAfterMs' in next)) await line.replyHeard();
      }
      if ((script.then ?? 'hangup') === 'hangup') await finish(call, 'completed');
    })();
  };

  const place = async (call: SimulatedCall) => {
    await report(call, 'initiated');
    const behaviour = callees.has(call.to) ? 'answer' : (behaviourOf(call.to) ?? 'failed');
    if (behaviour === 'failed') return finish(call, 'failed');
    await report(call, 'ringing');
    await new Promise((resolveRing) => setTimeout(resolveRing, ringMs));
    if (behaviour === 'busy') return finish(call, 'busy');
    if (behaviour === 'no-answer') return finish(call, 'no-answer');
    const script = scripts.get(call.to) ?? (behaviour === 'stay' || behaviour === 'carrier-silent' ? silentScript : defaultScript);
    await answer(call, script);
    if (behaviour === 'carrier-silent') call.silent = true;
  };

  const server: Server = createServer((request, response) => {
    void route(request, response).catch((error: Error) => json(response, 500, { message: error.message }));
  });

  async function route(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', `http://${host}`);
    const body = new URLSearchParams(await readText(request));
    const accountResource = /^\/2010-04-01\/Accounts\/([^/]+)\/((?:Available|Incoming)PhoneNumbers.*)$/.exec(url.pathname);
    if (accountResource) {
      const [user, authToken] = basicCredentials(request);
      if (user !== decodeURIComponent(accountResource[1] as string) || !authToken) return twilioError(response, 401, 20003, 'Authenticate');
      const form = request.headers['content-type']?.startsWith('application/x-www-form-urlencoded') ? body : undefined;
      numbers.handle({ method: request.method ?? 'GET', resource: accountResource[2] as string, query: url.searchParams, form, accountSid: user, authToken }, response);
      return;
    }
    const recordingMatch = /^\/2010-04-01\/Accounts\/([^/]+)\/Recordings\/(RE[0-9a-f]{32})\.(mp3|json)$/.exec(url.pathname);
    if (recordingMatch) {
      const recording = recordings.get(recordingMatch[2] as string);
      const [user] = basicCredentials(request);
      if (!recording || recording.deleted || recording.accountSid !== user) return json(response, 404, { code: 20404, message: 'The requested resource was not found', status: 404 });
      if (request.method === 'DELETE') {
        recording.deleted = true;
        response.writeHead(204).end();
        return;
      }
      response.writeHead(200, { 'content-type': 'audio/mpeg' }).end(recording.audio);
      return;
    }
    const createMatch = /^\/2010-04-01\/Accounts\/([^/]+)\/Calls\.json$/.exec(url.pathname);
    const updateMatch = /^\/2010-04-01\/Accounts\/([^/]+)\/Calls\/([^/]+)\.json$/.exec(url.pathname);
    const account = createMatch?.[1] ?? updateMatch?.[1];
    if (!account || request.method !== 'POST') return json(response, 404, { code: 20404, message: 'The requested resource was not found', status: 404 });
    const [user, authToken] = basicCredentials(request);
    if (user !== decodeURIComponent(account) || !authToken) return json(response, 401, { code: 20003, message: 'Authenticate', status: 401 });
    if (createMatch) {
      const twiml = body.get('Twiml') ?? '';
      if (twiml.length > inlineTwimlLimit) {
        return json(response, 400, {
          code: 32018,
          message: `Twiml size exceeded maximum allowed value of ${inlineTwimlLimit} characters`,
          more_info: 'https://www.twilio.com/docs/errors/32018',
          status: 400,
        });
      }
      const call: SimulatedCall = {
        sid: `CA${randomBytes(16).toString('hex')}`,
        accountSid: user,
        authToken,
        from: body.get('From') ?? '',
        to: body.get('To') ?? '',
        direction: 'outbound-api',
        status: 'queued',
        statusCallback: body.get('StatusCallback') ?? undefined,
        recordingCallback: body.get('Record') === 'true' ? (body.get('RecordingStatusCallback') ?? undefined) : undefined,
        timeLimitSeconds: Number(body.get('TimeLimit') ?? 14_400),
        ...relayOf(twiml),
        twiml,
        sequence: -1,
        finished: false,
        heard: [],
        dials: [],
      };
      calls.set(call.sid, call);
      created.push({ sid: call.sid, to: call.to, createdAt: Date.now() });
      live += 1;
      peak = Math.max(peak, live);
      json(response, 201, { sid: call.sid, account_sid: user, status: 'queued', to: call.to, from: call.from, direction: call.direction });
      setImmediate(() => void place(call));
      return;
    }
    const call = calls.get(decodeURIComponent(updateMatch?.[2] ?? ''));
    if (!call || call.accountSid !== user) return json(response, 404, { code: 20404, message: 'The requested resource was not found', status: 404 });
    if (body.get('Status') === 'completed' || body.get('Status') === 'canceled') await finish(call, call.answeredAt ? 'completed' : 'canceled');
    json(response, 200, { sid: call.sid, status: call.status });
  }

  /** A person's phone: lines said and hang-ups in, the agent's tokens and the call's progress out. */
  const connectPhone = (channel: WebSocket, number: string) => {
    const tell = (message: PhoneEvent) => channel.readyState === WebSocket.OPEN && channel.send(JSON.stringify(message));
    // One person a number: a second one would take the first one's calls.
    if (callees.has(number)) {
      tell({ type: 'end', reason: `${number} is already on a call from elsewhere` });
      channel.close();
      return;
    }
    let say: ((line: string | null) => void) | undefined;
    let play: ((audio: Uint8Array) => void) | undefined;
    let recording = false;
    const phone: InteractiveCallee = {
      onToken: (token, last) => tell({ type: 'token', token, last }),
      onEnd: (reason) => tell({ type: 'end', reason }),
      onConnected: (speak, playAudio) => {
        say = speak;
        play = playAudio;
        tell({ type: 'connected' });
      },
      onAudio: (frame) => {
        if (recording) tell({ type: 'audio', payload: Buffer.from(frame).toString('base64') });
      },
    };
    callees.set(number, phone);
    channel.on('message', (data) => {
      const message = JSON.parse(data.toString()) as PhoneMessage;
      if (message.type === 'say' && message.text) say?.(message.text);
      else if (message.type === 'hangup') say?.(null);
      else if (message.type === 'play') play?.(Buffer.from(message.audio, 'base64'));
      else if (message.type === 'record') recording = true;
      else if (message.type === 'dial') {
        simulator.dialIn({ from: number, to: message.to }).then(
          (callSid) => tell({ type: 'dialled', callSid }),
          (error: Error) => tell({ type: 'end', reason: error.message }),
        );
      }
    });
    channel.on('close', () => {
      if (callees.get(number) === phone) callees.delete(number);
    });
    tell({ type: 'ready', number });
  };

  // `npm run call` talks to the simulator itself; the playground goes through the local API's origin.
  const phoneChannel = new WebSocketServer({ noServer: true });
  server.on('upgrade', (request, socket, head) => {
    const url = new URL(request.url ?? '/', `http://${host}`);
    const number = url.searchParams.get('number');
    if (url.pathname !== phoneChannelPath || !number) {
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    phoneChannel.handleUpgrade(request, socket, head, (channel) => connectPhone(channel, number));
  });

  await new Promise<void>((resolveListen) => server.listen(options.port ?? 0, host, resolveListen));
  const port = (server.address() as { port: number }).port;

  const simulator: TwilioSimulator = {
    baseUrl: `http://${host}:${port}`,
    port,
    setScript: (number, script) => scripts.set(number, script),
    attachCallee: (number, callee) => callees.set(number, callee),
    connectPhone,
    callbacks,
    recordings,
    heard: (callSid) => calls.get(callSid)?.heard ?? [],
    heardWhole: async (callSid) => {
      const call = calls.get(callSid);
      await call?.line?.heardAll;
      return call?.heard ?? [];
    },
    twimlOf: (callSid) => calls.get(callSid)?.twiml,
    dials: (callSid) => calls.get(callSid)?.dials ?? [],
    sendToRelay: (callSid, message) => {
      const socket = calls.get(callSid)?.socket;
      if (socket?.readyState !== WebSocket.OPEN) throw new Error(`Call ${callSid} has no live relay`);
      socket.send(message);
    },
    outboundCalls: () => [...created],
    liveCalls: {
      current: () => live,
      peak: () => peak,
      resetPeak: () => {
        peak = live;
      },
    },
    addIncomingNumber: (options) => numbers.add(options),
    incomingNumber: (phoneNumber) => numbers.byPhoneNumber(phoneNumber),
    async dialIn(dial) {
      const number = numbers.byPhoneNumber(dial.to);
      if (!number) throw new Error(`${dial.to} is no number of any account of the simulator`);
      // The simulator runs no TwiML application or SIP trunk: a number routed to one cannot be dialled here.
      if (number.voiceApplicationSid || number.trunkSid || number.voiceMethod !== 'POST') throw new Error(`${dial.to} is not routed to a voice URL by POST`);
      const call: SimulatedCall = {
        sid: `CA${randomBytes(16).toString('hex')}`,
        accountSid: number.accountSid,
        authToken: numbers.tokenOf(number.accountSid) as string,
        from: dial.from,
        to: dial.to,
        direction: 'inbound',
        status: 'ringing',
        statusCallback: number.statusCallback || undefined,
        timeLimitSeconds: 0,
        sequence: -1,
        finished: false,
        heard: [],
        dials: [],
      };
      calls.set(call.sid, call);
      const twiml = await post(call, number.voiceUrl, { ...baseParams(call), CallerName: '' });
      call.twiml = twiml;
      Object.assign(call, relayOf(twiml));
      call.recordingCallback = attribute(twiml, 'Recording', 'recordingStatusCallback');
      if (call.recordingCallback) call.recordingSource = 'StartCallRecordingTwiML';
      if (!call.relayUrl && !call.streamUrl) {
        call.finished = true;
        const status = /<Reject/.test(twiml) ? 'busy' : 'failed';
        await report(call, status);
        callees.get(call.from)?.onEnd(`call ${status}: ${dial.to} did not take it`);
        return call.sid;
      }
      call.status = 'in-progress';
      await answer(call, dial.script ?? defaultScript);
      return call.sid;
    },
    stop: async () => {
      for (const call of calls.values()) {
        clearTimeout(call.timer);
        call.finished = true;
        call.socket?.terminate();
        call.line?.terminate();
      }
      server.closeAllConnections();
      await new Promise((resolveClose) => server.close(resolveClose));
    },
  };
  return simulator;
}


const finalStatuses = ['completed', 'busy', 'no-answer', 'failed', 'canceled'];

/** Twilio's limit of the `Twiml` parameter of a call it is asked to create (error 32018). */
export const inlineTwimlLimit = 4000;

/** The relay or stream a TwiML document connects to: its URL, the `<Connect>` action, and what it turned on. */
function relayOf(twiml: string): Pick<SimulatedCall, 'relayUrl' | 'streamUrl' | 'streamParameters' | 'actionUrl' | 'dtmfDetection' | 'partialPrompts'> {
  return {
    relayUrl: attribute(twiml, 'ConversationRelay', 'url'),
    streamUrl: attribute(twiml, 'Stream', 'url'),
    streamParameters: Object.fromEntries(
      [...twiml.matchAll(/<Parameter\b[^>]*>/g)].map((match) => [attribute(match[0], 'Parameter', 'name') ?? '', attribute(match[0], 'Parameter', 'value') ?? '']),
    ),
    actionUrl: attribute(twiml, 'Connect', 'action'),
    dtmfDetection: attribute(twiml, 'ConversationRelay', 'dtmfDetection') === 'true',
    partialPrompts: attribute(twiml, 'ConversationRelay', 'partialPrompts') === 'true',
  };
}

/** The text of each `<Say>` of a TwiML document, in order. */
function saysOf(twiml: string): string[] {
  return [...twiml.matchAll(/<Say\b[^>]*>([^<]*)<\/Say>/g)].map((match) => unescapeXml(match[1] as string));
}

const unescapeXml = (value: string): string => value.replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');

function attribute(twiml: string, element: string, name: string): string | undefined {
  const tag = new RegExp(`<${element}\\b[^>]*>`).exec(twiml)?.[0];
  const value = tag ? new RegExp(`\\b${name}="([^"]*)"`).exec(tag)?.[1] : undefined;
  return value === undefined ? undefined : unescapeXml(value);
}

/** The account SID and auth token of a request's Basic authorization. */
function basicCredentials(request: IncomingMessage): [string | undefined, string | undefined] {
  const [user, password] = Buffer.from((request.headers.authorization ?? '').replace(/^Basic /, ''), 'base64').toString('utf8').split(':');
  return [user, password];
}

/** A request's body as text (the local simulators read their requests with it). */
export function readText(request: IncomingMessage): Promise<string> {
  return new Promise((resolveText, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolveText(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

export function json(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}
