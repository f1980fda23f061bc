import { Metrics } from '@aws-lambda-powertools/metrics';
import { logger } from './logger.ts';
import type { MetricDefinition, MetricsRecorder } from './ports.ts';

/** The namespace of the platform's own CloudWatch metrics. */
export const metricsNamespace = 'AgentPlatform';
/** Every metric carries this `service` dimension (Powertools' default one): alarms and the dashboard name it. */
export const metricsService = 'agent-platform';

/** Messages a queue refused (characters, size…): each is a bug of ours, and the stack alarms on the first. */
export const queueRefusalsMetric: MetricDefinition = {
  name: 'QueueMessagesRefused',
  unit: 'Count',
  description: 'Messages a queue refused from the platform (the error log beside it says which queue and why)',
};

/**
 * Powertools Metrics, whose buffer leaves as one Embedded Metric Format line on stdout on Lambda and on ECS (the media
 * worker, whose awslogs driver sends stdout to CloudWatch Logs): CloudWatch Logs turns it into metric points, no API
 * call on the way. Anywhere else (`npm start`, tests, the bench) the same document goes to the log at DEBUG, so
 * metrics are visible locally without a line at INFO.
 */
class PlatformMetrics extends Metrics {
  override publishStoredMetrics(): this {
    if (!this.hasStoredMetrics()) return this;
    if (process.env.AWS_LAMBDA_FUNCTION_NAME || process.env.ECS_CONTAINER_METADATA_URI_V4) return super.publishStoredMetrics();
    logger.debug('metrics', { emf: this.serializeMetrics() });
    this.clearMetrics();
    return this;
  }
}

const buffer = new PlatformMetrics({ namespace: metricsNamespace, serviceName: metricsService });

/** The process's recorder; the handlers' pipeline and `observedHandler` flush it when each invocation ends. */
export const emfMetrics: MetricsRecorder = {
  add: (metric, value) => void buffer.addMetric(metric.name, metric.unit, value),
};

/** Sends what was recorded since the last flush (one EMF document; nothing when nothing was recorded). */
export function flushMetrics(): void {
  buffer.publishStoredMetrics();
}
