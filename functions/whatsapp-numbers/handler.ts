import { connectNumber, disconnectNumber, getNumber, listNumbers, updateNumber } from '../../shared/whatsapp/whatsapp.ts';
import { createHttpHandler } from '../../shared/platform/http/handler.ts';
import { whatsappRuntime } from '../../shared/whatsapp/whatsapp-runtime.ts';
import { whatsappNumberRoutes } from './routes.ts';

export const handler = createHttpHandler(
  whatsappNumberRoutes,
  {
    listWhatsappNumbers: ({ deps, principal, query }) => listNumbers(deps, principal.orgId, query),
    connectWhatsappNumber: ({ deps, principal, body }) => connectNumber(deps, principal.orgId, body),
    getWhatsappNumber: ({ deps, principal, params }) => getNumber(deps, principal.orgId, params.id),
    updateWhatsappNumber: ({ deps, principal, params, body }) => updateNumber(deps, principal.orgId, params.id, body),
    disconnectWhatsappNumber: ({ deps, principal, params }) => disconnectNumber(deps, principal.orgId, params.id),
  },
  whatsappRuntime,
);
