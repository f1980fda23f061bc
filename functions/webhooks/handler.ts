import { createWebhook, deleteWebhook, getWebhook, listWebhooks, rotateWebhookSecret, updateWebhook } from '../../shared/webhooks/webhooks.ts';
import { getDelivery, listDeliveries, replayDelivery } from '../../shared/webhooks/webhook-delivery.ts';
import { createHttpHandler } from '../../shared/platform/http/handler.ts';
import { webhookRuntime } from '../../shared/webhooks/webhook-runtime.ts';
import { webhookRoutes } from './routes.ts';

export const handler = createHttpHandler(
  webhookRoutes,
  {
    createWebhook: ({ deps, principal, body, sealResponse }) => createWebhook(deps, principal.orgId, body, sealResponse),
    listWebhooks: ({ deps, principal, query }) => listWebhooks(deps, principal.orgId, query),
    getWebhook: ({ deps, principal, params }) => getWebhook(deps, principal.orgId, params.id),
    updateWebhook: ({ deps, principal, params, body }) => updateWebhook(deps, principal.orgId, params.id, body),
    deleteWebhook: ({ deps, principal, params }) => deleteWebhook(deps, principal.orgId, params.id),
    rotateWebhookSecret: ({ deps, principal, params }) => rotateWebhookSecret(deps, principal.orgId, params.id),
    listDeliveries: ({ deps, principal, params, query }) => listDeliveries(deps, principal.orgId, params.id, query),
    getDelivery: ({ deps, principal, params }) => getDelivery(deps, principal.orgId, params.id, params.deliveryId),
    retryDelivery: ({ deps, principal, params }) => replayDelivery(deps, principal.orgId, params.id, params.deliveryId),
  },
  webhookRuntime,
);
