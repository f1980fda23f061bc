import { idParams } from '../../shared/schemas/common.ts';
import { createWebhookBody, deliveryParams, listDeliveriesQuery, listWebhooksQuery, updateWebhookBody } from '../../shared/schemas/webhook.ts';
import { defineRouteGroup } from '../../shared/http/route.ts';
import { webhookDeliveryQueue } from '../consumers.ts';

export const webhookRoutes = defineRouteGroup({
  name: 'webhooks',
  entry: 'functions/webhooks/handler.ts',
  // Replays are queued for the delivery function.
  queueUrls: { WEBHOOK_QUEUE_URL: webhookDeliveryQueue },
  // Creation and rotation seal signing secrets; only the delivery function opens them.
  sealsSecrets: true,
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
    listDeliveries: {
      method: 'GET',
      path: '/v1/chat/webhooks/{id}/deliveries',
      scope: 'webhooks:read',
      summary: 'List the deliveries of events to a webhook endpoint, newest first',
      successStatus: 200,
      params: idParams,
      query: listDeliveriesQuery,
      overlapAuthentication: true,
    },
    getDelivery: {
      method: 'GET',
      path: '/v1/chat/webhooks/{id}/deliveries/{deliveryId}',
      scope: 'webhooks:read',
      summary: 'Get one delivery',
      successStatus: 200,
      params: deliveryParams,
      overlapAuthentication: true,
    },
    retryDelivery: {
      method: 'POST',
      path: '/v1/chat/webhooks/{id}/deliveries/{deliveryId}/retry',
      scope: 'webhooks:write',
      summary: 'Send a delivered or dead-lettered event to the endpoint again, once',
      successStatus: 202,
      params: deliveryParams,
    },
  },
});
