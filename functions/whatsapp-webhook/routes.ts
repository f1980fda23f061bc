import * as z from 'zod';
import { defineRouteGroup } from '../../shared/platform/http/route.ts';
import { handshakeQuery, webhookParams } from '../../shared/whatsapp/whatsapp-schemas.ts';
import { whatsappInboundQueue } from '../consumers.ts';

/**
 * What Meta calls: public routes (no API key). The handshake is checked against the number's verify token (403
 * otherwise); each notification is verified with `X-Hub-Signature-256` under the app secret (401 otherwise),
 * queued, and answered 200 at once (docs/whatsapp.md).
 */
export const whatsappWebhookRoutes = defineRouteGroup({
  name: 'whatsapp-webhook',
  entry: 'functions/whatsapp-webhook/handler.ts',
  // Opens the numbers' verify tokens and app secrets.
  opensSecrets: true,
  queueUrls: { WHATSAPP_INBOUND_QUEUE_URL: whatsappInboundQueue },
  routes: {
    whatsappHandshake: {
      method: 'GET',
      path: '/whatsapp/webhook/{phone_number_id}',
      internal: true,
      scope: 'public',
      summary: "Meta's webhook verification: echoes hub.challenge when hub.verify_token is the number's",
      successStatus: 200,
      params: webhookParams,
      query: handshakeQuery,
    },
    whatsappNotification: {
      method: 'POST',
      path: '/whatsapp/webhook/{phone_number_id}',
      internal: true,
      scope: 'public',
      summary: "Meta's notifications (messages, statuses), verified by X-Hub-Signature-256 and queued",
      successStatus: 200,
      params: webhookParams,
      response: z.object({ received: z.literal(true) }),
    },
  },
});
