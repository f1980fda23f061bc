import { answerHandshake, receiveNotification } from '../../shared/whatsapp/whatsapp.ts';
import { createHttpHandler, RawBody } from '../../shared/platform/http/handler.ts';
import { whatsappRuntime } from '../../shared/whatsapp/whatsapp-runtime.ts';
import { whatsappWebhookRoutes } from './routes.ts';

export const handler = createHttpHandler(
  whatsappWebhookRoutes,
  {
    whatsappHandshake: async ({ deps, params, query }) =>
      new RawBody(await answerHandshake(deps, params.phone_number_id, query), { 'content-type': 'text/plain; charset=utf-8' }),
    whatsappNotification: async ({ deps, params, rawBody, headers }) => {
      await receiveNotification(deps, params.phone_number_id, rawBody, headers['x-hub-signature-256']);
      return { received: true as const };
    },
  },
  whatsappRuntime,
);
