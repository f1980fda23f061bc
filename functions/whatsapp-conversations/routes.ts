import { defineRouteGroup } from '../../shared/platform/http/route.ts';
import { sessionMediaParams, startConversationBody, startConversationResponse, whatsappNumberParams } from '../../shared/whatsapp/whatsapp-schemas.ts';

/**
 * What a business does on WhatsApp beyond answering: start a conversation with an approved template, and download
 * the media its customers sent (docs/whatsapp.md). Apart from the numbers' routes, which never open a secret.
 */
export const whatsappConversationRoutes = defineRouteGroup({
  name: 'whatsapp-conversations',
  entry: 'functions/whatsapp-conversations/handler.ts',
  // Opens a number's access token to send its template.
  opensSecrets: true,
  whatsappMedia: 'read',
  routes: {
    startWhatsappConversation: {
      method: 'POST',
      path: '/v1/chat/whatsapp/numbers/{id}/conversations',
      scope: 'channels:write',
      summary: "Start a WhatsApp conversation with an approved template, its parameters filled from the session variables; the number's agent (or `agentId`) answers the reply",
      successStatus: 201,
      params: whatsappNumberParams,
      body: startConversationBody,
      idempotent: true,
      response: startConversationResponse,
      errors: [
        'NOT_FOUND',
        'AGENT_INACTIVE',
        'SESSION_CREATION_ERROR',
        'WHATSAPP_TEMPLATE_REJECTED',
        'WHATSAPP_CREDENTIALS_REJECTED',
        'WHATSAPP_SEND_REFUSED',
        'WHATSAPP_UNAVAILABLE',
        'QUOTA_EXCEEDED',
        'SUBSCRIPTION_INACTIVE',
      ],
    },
    getSessionMedia: {
      method: 'GET',
      path: '/v1/chat/sessions/{id}/media/{mediaId}',
      aliases: ['/v1/chat/chat/sessions/{id}/media/{mediaId}'],
      scope: 'chat:read',
      summary: "A WhatsApp customer's media (`metadata.whatsapp.media.id` of their message): 302 to a signed URL valid for 5 minutes",
      successStatus: 302,
      params: sessionMediaParams,
      errors: ['SESSION_NOT_FOUND', 'NOT_FOUND'],
    },
  },
});
