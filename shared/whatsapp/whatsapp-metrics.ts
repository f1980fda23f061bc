import type { MetricDefinition } from '../platform/ports.ts';

/** The operational metrics of WhatsApp (docs/deploy.md#dashboards-and-alarms), recorded by whatsapp.ts. */
export const whatsappMetrics = {
  unhandledNotifications: {
    name: 'WhatsappNotificationsUnhandled',
    unit: 'Count',
    description: 'Parts of WhatsApp notifications Meta got its 200 for and the platform did not act on (the warning beside each says why)',
  },
} as const satisfies Record<string, MetricDefinition>;
