/** The namespace of the platform's own CloudWatch metrics. */
export const metricsNamespace = 'AgentPlatform';

/**
 * Adds `count` to the CloudWatch metric `name` through the Embedded Metric Format: a log line that Lambda's logs
 * turn into a metric point, with no API call on the way. `properties` ride along in the line (searchable in the
 * logs), not as dimensions, so that one alarm watches the metric whatever they hold.
 */
export function countMetric(name: string, count: number, properties: Record<string, unknown> = {}): void {
  const line = {
    ...properties,
    _aws: { Timestamp: Date.now(), CloudWatchMetrics: [{ Namespace: metricsNamespace, Dimensions: [[]], Metrics: [{ Name: name, Unit: 'Count' }] }] },
    [name]: count,
  };
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

/** Messages a queue refused (characters, size…): each is a bug of ours, and the stack alarms on the first. */
export const queueRefusalsMetric = 'QueueMessagesRefused';
