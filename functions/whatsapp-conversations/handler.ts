import { mediaLink, startConversation } from '../../shared/whatsapp/whatsapp-conversations.ts';
import { createHttpHandler, RawBody } from '../../shared/platform/http/handler.ts';
import { whatsappOutboundRuntime } from '../../shared/whatsapp/whatsapp-runtime.ts';
import { whatsappConversationRoutes } from './routes.ts';

export const handler = createHttpHandler(
  whatsappConversationRoutes,
  {
    startWhatsappConversation: ({ deps, principal, params, body }) => startConversation(deps, principal.orgId, params.id, body),
    getSessionMedia: async ({ deps, principal, params }) =>
      new RawBody('', { location: await mediaLink(deps, principal.orgId, params.id, params.mediaId), 'cache-control': 'no-store' }, { statusCode: 302 }),
  },
  whatsappOutboundRuntime,
);
