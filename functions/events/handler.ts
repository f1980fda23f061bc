import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import { eventStreamSettings, startOfEventStream, streamEvents, sseFrame, type EventStreamOutput } from '../../shared/webhooks/event-stream.ts';
import { ForbiddenError, UnauthorizedError } from '../../shared/platform/errors.ts';
import { toErrorEnvelope } from '../../shared/platform/http/error-envelope.ts';
import { createHttpHandler, serverSentEventHeaders, StreamingBody } from '../../shared/platform/http/handler.ts';
import { logger } from '../../shared/platform/logger.ts';
import { runtime } from '../../shared/runtime.ts';
import { eventRoutes } from './routes.ts';

export const handler = createHttpHandler(
  eventRoutes,
  {
    streamEvents: async ({ deps, principal, query, headers, requestId, reauthorize }) => {
      const settings = eventStreamSettings(deps.config);
      // Validated here, so that a bad cursor is answered in the error envelope before the stream begins.
      const lastEventId = headers['last-event-id']?.trim() || query.lastEventId;
      const start = startOfEventStream(lastEventId, deps.clock.now().getTime(), settings);
      const { stream, output } = sseOutput();
      void streamEvents(deps, { orgId: principal.orgId, start, types: query.types, reauthorize }, settings, output)
        .catch(async (error: unknown) => {
          if (error instanceof UnauthorizedError || error instanceof ForbiddenError) {
            logger.info('event stream ended: its credential is no longer valid', { requestId, code: error.code });
            await output.send(sseFrame.error(toErrorEnvelope(error, requestId)));
            return;
          }
          logger.error('event stream failed; the client resumes with Last-Event-ID', { requestId, error: error as Error });
          await output.send(sseFrame.comment('the stream failed; reconnect with Last-Event-ID'));
        })
        .finally(() => stream.end());
      return new StreamingBody(stream, { ...serverSentEventHeaders });
    },
  },
  runtime,
  // The REST API sends every method of this path here: the others get 405 rather than 404.
  { unmatched: Object.values(eventRoutes.routes) },
);

/** The response stream, with the signal that stops polling when the client goes away. */
function sseOutput(): { stream: PassThrough; output: EventStreamOutput } {
  const stream = new PassThrough();
  const disconnected = new AbortController();
  stream.on('error', () => undefined);
  stream.on('close', () => disconnected.abort());
  const send = async (frame: string) => {
    if (stream.destroyed || stream.writableEnded) return;
    if (!stream.write(frame)) await once(stream, 'drain', { signal: disconnected.signal }).catch(() => undefined);
  };
  return { stream, output: { send, signal: disconnected.signal } };
}
