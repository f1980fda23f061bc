import { PassThrough } from 'node:stream';
import { watchCredential } from '../../shared/auth/credential-watch.ts';
import { prepareTurn, runTurn, type TurnSink } from '../../shared/domain/turn.ts';
import { ModelError } from '../../shared/errors.ts';
import { toErrorEnvelope } from '../../shared/http/error-envelope.ts';
import { createHttpHandler, serverSentEventHeaders, StreamingBody } from '../../shared/http/handler.ts';
import { logger } from '../../shared/logger.ts';
import { conversationRuntime } from '../../shared/conversation-runtime.ts';
import { chatMessageRoutes } from './routes.ts';

const ignoreDeltas: TurnSink = { delta: () => undefined, failed: () => undefined };

export const handler = createHttpHandler(
  chatMessageRoutes,
  {
    sendMessage: async ({ deps, principal, verified, params, body, requestId, reauthorize }) => {
      const turn = await prepareTurn(deps, principal.orgId, params.id, body, verified);
      // The reply may run for minutes: its credential is checked again as the event stream's is, and a refusal
      // stops the turn with that error.
      const credential = watchCredential(reauthorize, deps.config.EVENT_STREAM_REAUTHORIZE_MS);
      const stop = new AbortController();
      credential.refused.addEventListener('abort', () => stop.abort(toErrorEnvelope(credential.refused.reason, requestId).error), { once: true });
      const options = { closeWhenAgentEnds: true, stop: stop.signal };
      if (!body.stream) {
        const result = await runTurn(deps, turn, ignoreDeltas, options).finally(() => credential.stop());
        if (credential.refused.aborted) throw credential.refused.reason;
        if (result.failure?.code === 'MODEL_ERROR') throw new ModelError(result.failure.message);
        if (result.failure) throw new Error(`turn failed: ${result.failure.message}`);
        return { userMessage: turn.userMessage, toolMessages: result.messages.slice(0, -1), assistantMessage: result.messages.at(-1) };
      }
      const events = new PassThrough();
      const sse = serverSentEvents(events, requestId);
      void runTurn(deps, turn, sse.sink, options)
        .finally(() => credential.stop())
        .then(
          () => sse.end(),
          (error: unknown) => {
            const envelope = toErrorEnvelope(error, requestId);
            if (envelope.error.status >= 500) logger.error('turn failed after streaming began', { requestId, error: error as Error });
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

/**
 * The SSE framing of a reply: `data: {"id","delta"}` events, an error event in the envelope shape if the turn
 * fails, then `data: [DONE]`. A client that goes away does not stop the turn: it finishes and is persisted.
 */
function serverSentEvents(stream: PassThrough, requestId: string): { sink: TurnSink; end(): void } {
  let aborted = false;
  stream.on('error', () => undefined);
  stream.on('close', () => {
    if (!stream.writableFinished && !aborted) {
      aborted = true;
      logger.warn('client disconnected during the reply; the turn continues and is persisted', { requestId, code: 'ABORT_ERROR' });
    }
  });
  const send = (data: string) => {
    if (!stream.destroyed) stream.write(`data: ${data}\n\n`);
  };
  return {
    sink: {
      delta: (id, delta) => send(JSON.stringify({ id, delta })),
      failed: (error) => send(JSON.stringify({ error, meta: { requestId, timestamp: new Date().toISOString() } })),
    },
    end: () => {
      send('[DONE]');
      stream.end();
    },
  };
}
