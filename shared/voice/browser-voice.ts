import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import * as z from 'zod';
import { logger } from '../platform/logger.ts';
import type { EndedReason } from '../conversations/session-schemas.ts';
import { bytesToPcm16, muLawDecode, muLawEncode, pcm16ToBytes, Resampler } from '../speech/telephone-audio.ts';
import { MediaCall, type MediaCallDeps, type StreamSink, type TurnTiming } from './media-call.ts';
import type { StreamOutbound } from './media-streams.ts';
import { claimVoiceSession, endCall, type CallRef } from './voice.ts';

/**
 * A browser's voice session on the media worker (docs/voice.md#voice-sessions-from-the-browser): the second transport
 * of the worker's conversation (`MediaCall`), beside Twilio's stream. Binary frames both ways are PCM 16-bit
 * little-endian mono at 16 kHz (the browser's 20 ms frames: 640 bytes); text frames are JSON events. The browser's
 * audio is converted to telephone audio for the conversation, and the agent's back.
 */

/** The rate of the audio a browser sends and is sent. */
const browserSampleRate = 16_000;
const telephoneRate = 8_000;

/** How long a connection may go unauthenticated: its first message must carry the token. */
const startWithinMs = 10_000;
/** A session in which nobody spoke for this long ends as `EXPIRED`. */
const voiceSessionIdleSeconds = 60;

/** What the browser sends as text: its token first, then played marks and the hang-up. */
const browserMessage = z.discriminatedUnion('type', [
  z.object({ type: z.literal('start'), token: z.string().min(1).max(200) }),
  z.object({ type: z.literal('mark'), name: z.string().min(1).max(100) }),
  z.object({ type: z.literal('hangup') }),
]);

/** Close codes: the token was refused (or never came), a message was not one of ours. */
const refusedCode = 4401;
const protocolCode = 4400;

/** Serves one browser's socket: admits it by its token, then carries its conversation until the session ends. */
export function serveBrowserVoice(deps: MediaCallDeps, ws: WebSocket, callRef: CallRef, observe: { turn?(timing: TurnTiming): void }, onEnd: () => void): MediaCall {
  const sendJson = (event: Record<string, unknown>) => {
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(event));
  };
  let admitted = false;
  let ended = false;
  let speaking = false;
  let outbound = new Resampler(telephoneRate, browserSampleRate);
  const inbound = new Resampler(browserSampleRate, telephoneRate);
  let ttlTimer: NodeJS.Timeout | undefined;
  let idleTimer: NodeJS.Timeout | undefined;
  const stillTalking = () => {
    clearTimeout(idleTimer);
    idleTimer = setTimeout(() => void end('EXPIRED'), voiceSessionIdleSeconds * 1000);
  };

  const sink: StreamSink = {
    send: (message: StreamOutbound) => {
      if (message.event === 'media') {
        if (!speaking) sendJson({ type: 'agent.audio.start' });
        speaking = true;
        stillTalking();
        sendAudio(outbound.push(muLawDecode(Buffer.from(message.media.payload, 'base64'))));
      } else if (message.event === 'mark') {
        // A piece's audio is whole: its tail goes out, and the browser echoes the mark once it has played it.
        sendAudio(outbound.flush());
        outbound = new Resampler(telephoneRate, browserSampleRate);
        speaking = false;
        sendJson({ type: 'agent.audio.end', mark: message.mark.name });
      } else {
        outbound = new Resampler(telephoneRate, browserSampleRate);
        speaking = false;
        sendJson({ type: 'clear' });
      }
    },
    // The agent ended the conversation (a goodbye once played); before admission, the token was refused.
    close: () => (admitted ? void end('HANGUP_AGENT') : ws.close(refusedCode, 'token refused')),
    transcript: (speaker, text, final) => {
      if (speaker === 'user') stillTalking();
      sendJson({ type: `${speaker}.transcript`, text, final });
    },
  };
  const sendAudio = (samples: Int16Array) => {
    if (samples.length > 0 && ws.readyState === WebSocket.OPEN) ws.send(pcm16ToBytes(samples));
  };
  const call = new MediaCall(deps, callRef, sink, observe);

  /** Ends the session once: its conversation stops, the session ends (analysis, usage), the browser is told. */
  async function end(reason: EndedReason): Promise<void> {
    if (ended) return;
    ended = true;
    clearTimeout(ttlTimer);
    clearTimeout(idleTimer);
    call.close();
    try {
      await endCall(deps, callRef.orgId, callRef.sessionId, reason);
    } catch (error) {
      logger.error('voice session not ended; the backstop will', { ...callRef, error: error as Error });
    }
    sendJson({ type: 'session.ended', reason });
    ws.close(1000);
  }

  const unauthenticated = setTimeout(() => ws.close(refusedCode, 'no token'), startWithinMs);
  let inbox = Promise.resolve();
  ws.on('message', (data, isBinary) => {
    if (isBinary) {
      if (!admitted || ended) return;
      const bytes = Buffer.isBuffer(data) ? data : Buffer.concat(data as Buffer[]);
      call.hear(muLawEncode(inbound.push(bytesToPcm16(bytes.subarray(0, bytes.length - (bytes.length % 2))))));
      return;
    }
    let parsed;
    try {
      parsed = browserMessage.safeParse(JSON.parse(data.toString()));
    } catch {
      parsed = undefined;
    }
    if (!parsed?.success) {
      ws.close(protocolCode, 'not a voice session message');
      return;
    }
    const message = parsed.data;
    inbox = inbox
      .then(async () => {
        if (message.type === 'start') {
          clearTimeout(unauthenticated);
          const connectionId = `web:${randomUUID()}`;
          await call.begin(connectionId, async () => {
            const { agent, ttl } = await claimVoiceSession(deps, callRef, connectionId, message.token);
            admitted = true;
            ttlTimer = setTimeout(() => void end('TTL'), ttl * 1000);
            stillTalking();
            sendJson({ type: 'session.started', sessionId: callRef.sessionId });
            return agent;
          });
        } else if (message.type === 'mark') await call.handle({ event: 'mark', mark: { name: message.name } });
        else if (admitted) await end('HANGUP_CALLEE');
      })
      .catch((error: unknown) => logger.error('voice session message failed', { ...callRef, error: error as Error }));
  });
  ws.on('error', (error) => logger.warn('voice session socket failed', { ...callRef, error }));
  ws.on('close', () => {
    clearTimeout(unauthenticated);
    if (admitted) void end('CONNECTION_LOST');
    else call.close();
    onEnd();
  });
  return call;
}
