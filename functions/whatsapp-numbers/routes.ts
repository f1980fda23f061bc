import { defineRouteGroup } from '../../shared/platform/http/route.ts';
import {
  createWhatsappNumberBody,
  listWhatsappNumbersQuery,
  updateWhatsappNumberBody,
  whatsappNumberList,
  whatsappNumberParams,
  whatsappNumberRecord,
} from '../../shared/whatsapp/whatsapp-schemas.ts';

export const whatsappNumberRoutes = defineRouteGroup({
  name: 'whatsapp-numbers',
  entry: 'functions/whatsapp-numbers/handler.ts',
  // Seals a number's access token, app secret and verify token; never opens them.
  sealsSecrets: true,
  namesPublicUrl: true,
  routes: {
    listWhatsappNumbers: {
      method: 'GET',
      path: '/v1/chat/whatsapp/numbers',
      scope: 'channels:read',
      summary: "The organization's WhatsApp numbers (oldest first)",
      successStatus: 200,
      query: listWhatsappNumbersQuery,
      response: whatsappNumberList,
    },
    connectWhatsappNumber: {
      method: 'POST',
      path: '/v1/chat/whatsapp/numbers',
      scope: 'channels:write',
      summary: 'Connect a WhatsApp business number to an agent (the access token, app secret and verify token are write-only)',
      successStatus: 201,
      body: createWhatsappNumberBody,
      response: whatsappNumberRecord,
      errors: ['WHATSAPP_NUMBER_TAKEN', 'NOT_FOUND'],
    },
    getWhatsappNumber: {
      method: 'GET',
      path: '/v1/chat/whatsapp/numbers/{id}',
      scope: 'channels:read',
      summary: 'Get a WhatsApp number (never its secrets)',
      successStatus: 200,
      params: whatsappNumberParams,
      response: whatsappNumberRecord,
    },
    updateWhatsappNumber: {
      method: 'PATCH',
      path: '/v1/chat/whatsapp/numbers/{id}',
      scope: 'channels:write',
      summary: "Change a WhatsApp number's agent, label, unsupported-message reply or secrets (null removes label and reply)",
      successStatus: 200,
      params: whatsappNumberParams,
      body: updateWhatsappNumberBody,
      response: whatsappNumberRecord,
      errors: ['CONCURRENT_MODIFICATION'],
    },
    disconnectWhatsappNumber: {
      method: 'DELETE',
      path: '/v1/chat/whatsapp/numbers/{id}',
      scope: 'channels:write',
      summary: 'Disconnect a WhatsApp number (any organization can then connect it)',
      successStatus: 204,
      params: whatsappNumberParams,
    },
  },
});
