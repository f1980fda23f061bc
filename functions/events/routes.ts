import { defineRouteGroup } from '../../shared/platform/http/route.ts';
import { eventStreamQuery, streamedEventSchema } from '../../shared/webhooks/event-stream-schemas.ts';

/** Its own function because it streams for minutes: on AWS it sits behind a streaming integration, not the HTTP API. */
export const eventRoutes = defineRouteGroup({
  name: 'events',
  entry: 'functions/events/handler.ts',
  streaming: true,
  routes: {
    streamEvents: {
      method: 'GET',
      path: '/v1/chat/events/stream',
      scope: 'chat:read',
      summary: "The organization's domain events as server-sent events, resumable with Last-Event-ID",
      successStatus: 200,
      events: streamedEventSchema,
      query: eventStreamQuery,
    },
  },
});
