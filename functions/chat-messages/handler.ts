import { PassThrough } from 'node:stream';
import type { z } from 'zod';
import { watchCredential } from '../../shared/identity/credential-watch.ts';
import { prepareTurn, runTurn, type TurnSink } from '../../shared/conversations/turn.ts';
import { IdempotencyInProgressError, ModelError } from '../../shared/platform/errors.ts';
import { toErrorEnvelope } from '../../shared/platform/http/error-envelope.ts';
import { createHttpHandler, serverSentEventHeaders, StreamingBody } from '../../shared/platform/http/handler.ts';
import { logger } from '../../shared/platform/logger.ts';
import { conversationRuntime } from '../../shared/conversations/conversation-runtime.ts';
import type { Message, sentMessageSchema } from '../../shared/conversations/session-schemas.ts';
import { chatMessageRoutes } from './routes.ts';

const ignoreDeltas: TurnSink = { delta: () => undefined, failed: () => undefined };

export const handler = createHttpHandler(
  chatMessageRoutes,
  {
    sendMessage: async ({ deps, principal, verified, params, body, requestId, reauthorize, sealResponse, streamIdempotency }) => {
      const turn = await prepareTurn(deps, principal.orgId, params.id, body, verified);
      // The reply may run for minutes: its credential is checked again as the event stream's is, and a refusal
      // stops the turn with that error.
      const credential = watchCredential(reauthorize, deps.config.EVENT_STREAM_REAUTHORIZE_MS);
      const stop = new AbortController();
      credential.refused.addEventListener('abort', () => stop.abort(toErrorEnvelope(credential.refused.reason, requestId).error), { once: true });
      if (!body.stream) {
        const sealReply = sealResponse && ((messages: readonly Message[]) => sealResponse(sentMessageOf(messages)));
        const result = await runTurn(deps, turn, ignoreDeltas, { closeWhenAgentEnds: true, stop: stop.signal, sealReply }).finally(() => credential.stop());
        if (credential.refused.aborted) throw credential.refused.reason;
        if (result.failure?.code === 'MODEL_ERROR') throw new ModelError(result.failure.message);
        if (result.failure) throw new Error(`turn failed: ${result.failure.message}`);
        return sentMessageOf([turn.userMessage, ...result.messages]);
      }
      const events = new PassThrough();
      const sse = serverSentEvents(events, requestId);
      // A retry with the same Idempotency-Key gets the stream again: the events sent, then [DONE].
      const sealReply = streamIdempotency && (() => streamIdempotency.seal(sse.sent() + doneEvent));
      void runTurn(deps, turn, sse.sink, { closeWhenAgentEnds: true, stop: stop.signal, sealReply })
        .finally(() => credential.stop())
        .then(
          async (result) => {
            if (result.failure) await releaseKey(streamIdempotency, requestId);
            sse.end();
          },
          async (error: unknown) => {
            const envelope = toErrorEnvelope(error, requestId);
            if (envelope.error.status >= 500) logger.error('turn failed after streaming began', { requestId, error: error as Error });
            // Unless another request took the key over while the turn ran: the key is its now.
            if (!(error instanceof IdempotencyInProgressError)) await releaseKey(streamIdempotency, requestId);
            sse.sink.failed(envelope.error);
            sse.end();
          },
        );
      return new StreamingBody(events, { ...serverSentEventHeaders });
    },
  },
  conversationRuntime,
  // The REST API sends every method of this path here: the others get 405 rather than 404.
  { unmatched: Object.values(chatMessageRoutes.routes) },
);

/** The non-streamed answer, from the turn's messages in order: the user's, the tools', the assistant's reply. */
function sentMessageOf(messages: readonly Message[]): z.output<typeof sentMessageSchema> {
  return { userMessage: messages[0] as Message, toolMessages: messages.slice(1, -1), assistantMessage: messages.at(-1) as Message };
}

/** A failed streamed turn frees its Idempotency-Key, so that a retry runs it again; failing to free it only delays that. */
async function releaseKey(streamIdempotency: { release(): Promise<void> } | undefined, requestId: string): Promise<void> {
  await streamIdempotency?.release().catch((error: unknown) => logger.warn('could not release the Idempotency-Key of a failed turn', { requestId, error: error as Error }));
}

const doneEvent = 'data: [DONE]\n\n';

/**
 * The SSE framing of a reply: `data: {"id","delta"}` events, the citations (`{"id","delta":"","citations"}`) of an
 * agent with a knowledge store, an error event in the envelope shape if the turn fails, then `data: [DONE]`. A
 * client that goes away does not stop the turn: it finishes and is persisted.
 */
function serverSentEvents(stream: PassThrough, requestId: string): { sink: TurnSink; sent(): string; end(): void } {
  let sent = '';
  let aborted = false;
  stream.on('error', () => undefined);
  stream.on('close', () => {
    if (!stream.writableFinished && !aborted) {
      aborted = true;
      logger.warn('client disconnected during the reply; the turn continues and is persisted', { requestId, code: 'ABORT_ERROR' });
    }
  });
  const send = (data: string) => {
    const event = `data: ${data}\n\n`;
    sent += event;
    if (!stream.destroyed) stream.write(event);
  };
  return {
    sink: {
      delta: (id, delta) => send(JSON.stringify({ id, delta })),
      citations: (id, citations) => send(JSON.stringify({ id, delta: '', citations })),
      failed: (error) => send(JSON.stringify({ error, meta: { requestId, timestamp: new Date().toISOString() } })),
    },
    sent: () => sent,
    end: () => {
      if (!stream.destroyed) stream.write(doneEvent);
      stream.end();
    },
  };
}
