import { idParams } from '../../shared/schemas/common.ts';
import { createWebhookBody, listWebhooksQuery, updateWebhookBody } from '../../shared/schemas/webhook.ts';
import { defineRouteGroup } from '../../shared/http/route.ts';

export const webhookRoutes = defineRouteGroup({
  name: 'webhooks',
  entry: 'functions/webhooks/handler.ts',
  routes: {
    createWebhook: {
      method: 'POST',
      path: '/v1/chat/webhooks',
      scope: 'webhooks:write',
      summary: 'Register a webhook endpoint; its signing secret is in this response only',
      successStatus: 201,
      body: createWebhookBody,
      idempotent: true,
    },
    listWebhooks: {
      method: 'GET',
      path: '/v1/chat/webhooks',
      scope: 'webhooks:read',
      summary: 'List webhook endpoints',
      successStatus: 200,
      query: listWebhooksQuery,
      overlapAuthentication: true,
    },
    getWebhook: {
      method: 'GET',
      path: '/v1/chat/webhooks/{id}',
      scope: 'webhooks:read',
      summary: 'Get a webhook endpoint',
      successStatus: 200,
      params: idParams,
      overlapAuthentication: true,
    },
    updateWebhook: {
      method: 'PATCH',
      path: '/v1/chat/webhooks/{id}',
      scope: 'webhooks:write',
      summary: 'Update a webhook endpoint (url, events, description, enabled)',
      successStatus: 200,
      params: idParams,
      body: updateWebhookBody,
    },
    deleteWebhook: {
      method: 'DELETE',
      path: '/v1/chat/webhooks/{id}',
      scope: 'webhooks:write',
      summary: 'Delete a webhook endpoint',
      successStatus: 204,
      params: idParams,
    },
    rotateWebhookSecret: {
      method: 'POST',
      path: '/v1/chat/webhooks/{id}/rotate-secret',
      scope: 'webhooks:write',
      summary: 'Rotate the signing secret; the previous one keeps signing for 24 hours',
      successStatus: 200,
      params: idParams,
    },
  },
});
