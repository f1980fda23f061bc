import { createWebhook, deleteWebhook, getWebhook, listWebhooks, rotateWebhookSecret, updateWebhook } from '../../shared/domain/webhooks.ts';
import { createHttpHandler } from '../../shared/http/handler.ts';
import { runtime } from '../../shared/runtime.ts';
import { webhookRoutes } from './routes.ts';

export const handler = createHttpHandler(
  webhookRoutes,
  {
    createWebhook: ({ deps, principal, body }) => createWebhook(deps, principal.orgId, body),
    listWebhooks: ({ deps, principal, query }) => listWebhooks(deps, principal.orgId, query),
    getWebhook: ({ deps, principal, params }) => getWebhook(deps, principal.orgId, params.id),
    updateWebhook: ({ deps, principal, params, body }) => updateWebhook(deps, principal.orgId, params.id, body),
    deleteWebhook: ({ deps, principal, params }) => deleteWebhook(deps, principal.orgId, params.id),
    rotateWebhookSecret: ({ deps, principal, params }) => rotateWebhookSecret(deps, principal.orgId, params.id),
  },
  runtime,
);
