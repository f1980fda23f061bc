/**
 * CloudWatch's Embedded Metric Format, as its specification states it ("Specification: Embedded metric format",
 * https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html):
 * its document structure (members, types, at most 30 dimensions a set, 100 metrics a directive and 100 values a
 * metric, the units) and CloudWatch's limits on names (PutMetricData: namespace and metric and dimension names of
 * 1 to 255 characters, dimension values of 1 to 1024). A document that breaks one is not extracted on AWS.
 */

/** The specification's own example document (its "Example" section). */
export const documentedEmfExample = {
  _aws: {
    Timestamp: 1574109732004,
    CloudWatchMetrics: [
      {
        Namespace: 'lambda-function-metrics',
        Dimensions: [['functionVersion']],
        Metrics: [{ Name: 'time', Unit: 'Milliseconds', StorageResolution: 60 }],
      },
    ],
  },
  functionVersion: '$LATEST',
  time: 100,
  requestId: '989ffbf8-9ace-4817-a57c-e4dd734019ee',
};

const units = new Set([
  'Seconds', 'Microseconds', 'Milliseconds', 'Bytes', 'Kilobytes', 'Megabytes', 'Gigabytes', 'Terabytes', 'Bits', 'Kilobits', 'Megabits',
  'Gigabits', 'Terabits', 'Percent', 'Count', 'Bytes/Second', 'Kilobytes/Second', 'Megabytes/Second', 'Gigabytes/Second', 'Terabytes/Second',
  'Bits/Second', 'Kilobits/Second', 'Megabits/Second', 'Gigabits/Second', 'Terabits/Second', 'Count/Second', 'None',
]);

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** What in `document` breaks the specification (empty when CloudWatch would extract its metrics). */
export function emfProblems(document: unknown): string[] {
  const problems: string[] = [];
  if (!isObject(document) || !isObject(document._aws)) return ['the root must be an object with an _aws object'];
  const { Timestamp, CloudWatchMetrics } = document._aws;
  if (typeof Timestamp !== 'number' || !Number.isInteger(Timestamp)) problems.push('_aws.Timestamp must be an integer (ms since the epoch)');
  if (!Array.isArray(CloudWatchMetrics)) return [...problems, '_aws.CloudWatchMetrics must be an array'];
  for (const [index, directive] of CloudWatchMetrics.entries()) {
    const at = `CloudWatchMetrics[${index}]`;
    if (!isObject(directive)) {
      problems.push(`${at} must be an object`);
      continue;
    }
    const { Namespace, Dimensions, Metrics } = directive;
    if (typeof Namespace !== 'string' || Namespace.length < 1 || Namespace.length > 255) problems.push(`${at}.Namespace must be a string of 1 to 255 characters`);
    if (!Array.isArray(Dimensions)) problems.push(`${at}.Dimensions must be an array of dimension sets`);
    else {
      for (const set of Dimensions) {
        if (!Array.isArray(set) || set.length > 30) {
          problems.push(`${at}.Dimensions: each set is an array of at most 30 names`);
          continue;
        }
        for (const name of set) {
          if (typeof name !== 'string' || name.length < 1 || name.length > 255) problems.push(`${at}: dimension name ${String(name)} must be a string of 1 to 255 characters`);
          else if (typeof document[name] !== 'string' || (document[name] as string).length < 1 || (document[name] as string).length > 1024) {
            problems.push(`${at}: dimension ${name} must be a member of the root holding a string of 1 to 1024 characters`);
          }
        }
      }
    }
    if (!Array.isArray(Metrics) || Metrics.length > 100) {
      problems.push(`${at}.Metrics must be an array of at most 100 metrics`);
      continue;
    }
    for (const metric of Metrics) {
      if (!isObject(metric) || typeof metric.Name !== 'string' || metric.Name.length < 1 || metric.Name.length > 255) {
        problems.push(`${at}.Metrics: each has a Name of 1 to 255 characters`);
        continue;
      }
      if (metric.Unit !== undefined && !units.has(metric.Unit as string)) problems.push(`${metric.Name}: Unit ${String(metric.Unit)} is not a CloudWatch unit`);
      if (metric.StorageResolution !== undefined && metric.StorageResolution !== 1 && metric.StorageResolution !== 60) problems.push(`${metric.Name}: StorageResolution is 1 or 60`);
      const value = document[metric.Name];
      const values = Array.isArray(value) ? value : [value];
      if (values.length < 1 || values.length > 100 || !values.every((point) => typeof point === 'number' && Number.isFinite(point))) {
        problems.push(`${metric.Name} must be a member of the root holding a number or an array of 1 to 100 numbers`);
      }
    }
  }
  return problems;
}
