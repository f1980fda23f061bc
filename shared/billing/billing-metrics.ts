import type { MetricDefinition } from '../platform/ports.ts';

/** The operational metrics of billing (docs/deploy.md#dashboards-and-alarms), recorded by stripe.ts. */
export const billingMetrics = {
  meterEventsRefused: {
    name: 'MeterEventsRefused',
    unit: 'Count',
    description: 'Usage events Stripe refused for good: that usage is not billed (the error log beside each says which)',
  },
} as const satisfies Record<string, MetricDefinition>;
