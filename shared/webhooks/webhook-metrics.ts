import type { MetricDefinition } from '../platform/ports.ts';

/** The operational metrics of webhook deliveries (docs/deploy.md#dashboards-and-alarms), recorded by webhook-delivery.ts. */
export const webhookMetrics = {
  delivered: { name: 'WebhookDeliveries', unit: 'Count', description: 'Webhook attempts the receiver accepted (2xx): deliveries made' },
  attemptsFailed: { name: 'WebhookAttemptsFailed', unit: 'Count', description: 'Webhook attempts that failed (non-2xx, timeout, blocked address): each is retried or dead-lettered' },
  deadLettered: { name: 'WebhookDeliveriesDeadLettered', unit: 'Count', description: 'Webhook deliveries given up: the retry schedule spent, a 410 Gone, or the endpoint disabled' },
} as const satisfies Record<string, MetricDefinition>;
