/** A browser's side of a voice session (platform `WEB`): its WebSocket to the media worker, as the playground drives it. */
import WebSocket from 'ws';
import { pcm16ToBytes } from '../../shared/speech/telephone-audio.ts';
import { eventually } from './eventually.ts';
import { browserSpeech } from './speech.ts';

/** What the browser sends and is sent, frame by frame. */
export interface Browser {
  socket: WebSocket;
  events: Record<string, unknown>[];
  /** The agent's audio as received: PCM16 16 kHz. */
  audio: Buffer[];
  closed: Promise<number>;
  send(message: object): void;
  /** Speaks `text` as a microphone would: 20 ms frames of PCM16 16 kHz in real time, then silence until `stop`. */
  say(text: string): Promise<void>;
  stop(): void;
}

/** A browser's socket: it echoes each piece's mark at once, as a player that has played it. */
export function connect(url: string): Browser {
  const socket = new WebSocket(url);
  const events: Record<string, unknown>[] = [];
  const audio: Buffer[] = [];
  socket.on('message', (data, isBinary) => {
    if (isBinary) {
      audio.push(data as Buffer);
      return;
    }
    const event = JSON.parse(data.toString()) as Record<string, unknown>;
    events.push(event);
    if (event.type === 'agent.audio.end') socket.send(JSON.stringify({ type: 'mark', name: event.mark }));
  });
  const closed = new Promise<number>((resolveClosed) => socket.once('close', (code) => resolveClosed(code)));
  const opened = new Promise<void>((resolveOpen) => socket.once('open', () => resolveOpen()));
  let line: NodeJS.Timeout | undefined;
  let queued: Buffer[] = [];
  const silence = Buffer.alloc(640);
  const browser: Browser = {
    socket,
    events,
    audio,
    closed,
    send: (message) => void opened.then(() => socket.send(JSON.stringify(message))),
    say: async (text) => {
      const pcm = Buffer.from(pcm16ToBytes(await browserSpeech(text)));
      for (let offset = 0; offset < pcm.length; offset += 640) queued.push(pcm.subarray(offset, offset + 640));
      await opened;
      // A microphone never stops sending: silence between utterances, in real time (decision 469).
      line ??= setInterval(() => {
        if (socket.readyState === WebSocket.OPEN) socket.send(queued.shift() ?? silence);
      }, 20);
      await eventually(() => queued.length, (left) => left === 0);
    },
    stop: () => {
      clearInterval(line);
      queued = [];
    },
  };
  return browser;
}

/** The JSON events of `type` the browser received. */
export const ofType = (browser: Browser, type: string) => browser.events.filter((event) => event.type === type);
