import { idParams } from '../../shared/platform/schemas/common.ts';
import { replyEventSchema, sendMessageBody, sentMessageSchema } from '../../shared/conversations/session-schemas.ts';
import { defineRouteGroup } from '../../shared/platform/http/route.ts';

/** Its own function because it streams: on AWS it sits behind a streaming integration, not the HTTP API. */
export const chatMessageRoutes = defineRouteGroup({
  name: 'chat-messages',
  entry: 'functions/chat-messages/handler.ts',
  streaming: true,
  runsTurns: true,
  // A turn's tokens stream while its CPU-bound work runs: CPU, not memory, sets it.
  memoryMb: 1024,
  routes: {
    sendMessage: {
      method: 'POST',
      path: '/v1/chat/chat/sessions/{id}/messages',
      scope: 'chat:write',
      summary: 'Send a message; the reply streams as server-sent events unless stream is false',
      successStatus: 200,
      response: sentMessageSchema,
      events: replyEventSchema,
      errors: ['SESSION_NOT_FOUND', 'SESSION_EXPIRED', 'INVALID_SESSION', 'SESSION_BUSY', 'MESSAGES_HISTORY_ERROR', 'MODEL_ERROR', 'QUOTA_EXCEEDED', 'SUBSCRIPTION_INACTIVE'],
      params: idParams,
      body: sendMessageBody,
      // The turn's reads start while the key is confirmed: one round trip fewer before the first token.
      overlapAuthentication: true,
      // A retry gets the stored reply (streamed: the same events); see docs/sessions.md#idempotent-sends.
      idempotent: true,
    },
  },
});
