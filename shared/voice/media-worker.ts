import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import WebSocket, { WebSocketServer } from 'ws';
import { InvalidSignatureError } from '../platform/errors.ts';
import { logger } from '../platform/logger.ts';
import { MediaCall, type MediaCallDeps, type TurnTiming } from './media-call.ts';
import { parseStreamMessage } from './media-streams.ts';
import { serveBrowserVoice } from './browser-voice.ts';
import { verifyMediaStreamUpgrade, voiceSessionPath } from './voice.ts';

/** The path Twilio's streams upgrade on: `/media-stream/{orgId}/{sessionId}` (the call, named by `mediaStreamUrl`). */
export const mediaStreamPath = '/media-stream';

export interface MediaWorker {
  server: Server;
  /** The streams open now: what scale-in protection and the ActiveCalls metric follow. */
  activeCalls(): number;
  /** Calls `listener` each time the count of active calls changes. */
  onActiveCallsChange(listener: (count: number) => void): void;
  /**
   * Stops taking streams (an upgrade is refused with 503, `/health` answers 503 so that the load balancer stops
   * sending), and resolves once the calls under way have ended.
   */
  drain(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The media worker's HTTP server (decision 438): Twilio Media Streams' WebSocket at `/media-stream/…`, browsers'
 * voice sessions at `/voice-session/…` (decision 500), and `/health`
 * for the load balancer. An upgrade without Twilio's signature over the call's stream URL is refused with 401
 * before any audio flows.
 */
export function createMediaWorker(deps: MediaCallDeps, observe: { turn?(timing: TurnTiming): void } = {}): MediaWorker {
  const streams = new WebSocketServer({ noServer: true, maxPayload: 1 << 20 });
  const calls = new Set<MediaCall>();
  const listeners: ((count: number) => void)[] = [];
  let draining = false;
  let drained: (() => void) | undefined;
  const changed = () => {
    for (const listener of listeners) listener(calls.size);
    if (draining && calls.size === 0) drained?.();
  };

  const server = createServer((request, response) => {
    if (request.url === '/health') {
      response.writeHead(draining ? 503 : 200, { 'content-type': 'application/json' }).end(JSON.stringify({ status: draining ? 'draining' : 'ok', activeCalls: calls.size }));
      return;
    }
    response.writeHead(404).end();
  });

  server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const session = new RegExp(`^${voiceSessionPath}/([^/?]+)/([^/?]+)$`).exec(request.url ?? '');
    if (session) {
      // A browser cannot sign its upgrade: its first message carries the session's single-use token.
      if (draining) {
        socket.end('HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
        return;
      }
      const callRef = { orgId: decodeURIComponent(session[1] as string), sessionId: decodeURIComponent(session[2] as string) };
      streams.handleUpgrade(request, socket, head, (ws) => {
        const call = serveBrowserVoice(deps, ws, callRef, observe, () => {
          calls.delete(call);
          changed();
        });
        calls.add(call);
        changed();
      });
      return;
    }
    void admit(request, socket).then((call) => {
      if (!call) return;
      streams.handleUpgrade(request, socket, head, (ws) => serve(ws, call));
    });
  });

  /** The call the upgrade names, once its signature holds; otherwise the refusal is written and undefined returned. */
  async function admit(request: IncomingMessage, socket: Duplex): Promise<{ orgId: string; sessionId: string } | undefined> {
    const refuse = (status: string) => {
      socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
      return undefined;
    };
    if (draining) return refuse('503 Service Unavailable');
    const match = new RegExp(`^${mediaStreamPath}/([^/?]+)/([^/?]+)$`).exec(request.url ?? '');
    if (!match) return refuse('404 Not Found');
    const call = { orgId: decodeURIComponent(match[1] as string), sessionId: decodeURIComponent(match[2] as string) };
    const signature = request.headers['x-twilio-signature'];
    try {
      await verifyMediaStreamUpgrade(deps, call, typeof signature === 'string' ? signature : undefined);
      return call;
    } catch (error) {
      if (error instanceof InvalidSignatureError) return refuse('401 Unauthorized');
      logger.error('media stream upgrade failed', { ...call, error: error as Error });
      return refuse('500 Internal Server Error');
    }
  }

  function serve(ws: WebSocket, callRef: { orgId: string; sessionId: string }): void {
    const call = new MediaCall(
      deps,
      callRef,
      {
        send: (message) => {
          if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(message));
        },
        close: () => ws.close(1000),
      },
      observe,
    );
    calls.add(call);
    changed();
    // Twilio's messages are handled one after another, in order: a `start` is admitted before its first `media`.
    let inbox = Promise.resolve();
    ws.on('message', (data) => {
      const message = parseStreamMessage(data.toString());
      if (!message) return;
      inbox = inbox.then(() => call.handle(message)).catch((error: unknown) => logger.error('media stream message failed', { ...callRef, error: error as Error }));
    });
    ws.on('error', (error) => logger.warn('media stream socket failed', { ...callRef, error }));
    ws.on('close', () => {
      call.close();
      calls.delete(call);
      changed();
    });
  }

  return {
    server,
    activeCalls: () => calls.size,
    onActiveCallsChange: (listener) => listeners.push(listener),
    drain: () => {
      draining = true;
      return calls.size === 0
        ? Promise.resolve()
        : new Promise<void>((resolveDrained) => {
            drained = resolveDrained;
          });
    },
    close: async () => {
      for (const client of streams.clients) client.terminate();
      server.closeAllConnections();
      await new Promise((resolveClose) => server.close(resolveClose));
    },
  };
}
