import { Duration, NestedStack, type Stack } from 'aws-cdk-lib';
import type * as apigateway from 'aws-cdk-lib/aws-apigateway';
import type * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sns from 'aws-cdk-lib/aws-sns';
import * as snsSubscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';
import { activeCallsMetric } from '../services/media-worker/active-calls.ts';
import { analysisMetrics } from '../shared/analysis/analysis-metrics.ts';
import { billingMetrics } from '../shared/billing/billing-metrics.ts';
import { conversationMetrics } from '../shared/conversations/conversation-metrics.ts';
import { metricsNamespace, metricsService, queueRefusalsMetric } from '../shared/platform/metrics.ts';
import type { MetricDefinition } from '../shared/platform/ports.ts';
import { tableDefinition } from '../shared/platform/store/table.ts';
import { webhookMetrics } from '../shared/webhooks/webhook-metrics.ts';
import { whatsappMetrics } from '../shared/whatsapp/whatsapp-metrics.ts';

/** Every metric the platform records itself (namespace AgentPlatform): each is on the dashboard and in docs/deploy.md. */
export const platformMetrics: readonly MetricDefinition[] = [
  ...Object.values(conversationMetrics),
  ...Object.values(analysisMetrics),
  ...Object.values(webhookMetrics),
  ...Object.values(whatsappMetrics),
  ...Object.values(billingMetrics),
  queueRefusalsMetric,
  activeCallsMetric,
];

/** The thresholds of the alarms (docs/deploy.md#dashboards-and-alarms, decisions 335–339). */
export const alarmThresholds = {
  /** Per cent of API requests answered 5xx, over two consecutive 5-minute periods of at least `minimumRequests`. */
  serverErrorPercent: 5,
  minimumRequests: 20,
  /** p99 of the platform's own time in a turn, over three consecutive 5-minute periods. */
  turnOverheadP99Ms: 300,
} as const;

const period = Duration.minutes(5);

export interface OperationsProps {
  /** The operations topic every alarm notifies, going into alarm and back to OK. */
  alarmTopic: sns.Topic;
  /** Subscribed to the topic by e-mail (AWS sends a confirmation message first). */
  alarmEmail?: string | undefined;
  /** Every function of the stack, by name: route groups, the voice relay, the consumers. */
  functions: ReadonlyMap<string, lambda.Function>;
  /** The functions of the request path, traced with X-Ray. */
  tracedFunctions: readonly lambda.Function[];
  httpApi: apigwv2.HttpApi;
  streamingApi: apigateway.RestApi;
  table: dynamodb.TableV2;
  /** Every dead-letter queue: a name for its alarm, and what lands in it. */
  deadLetterQueues: readonly { name: string; queue: sqs.Queue; what: string }[];
}

/** The alarms and the dashboard, in a nested stack of their own: the main one stays within CloudFormation's 500 resources. */
export class OperationsStack extends NestedStack {
  readonly dashboard: cloudwatch.Dashboard;
  readonly alarms: readonly cloudwatch.Alarm[];

  constructor(scope: Stack, id: string, props: OperationsProps) {
    super(scope, id, { description: 'agent-platform operations: the alarms and the dashboard (docs/deploy.md#dashboards-and-alarms)' });
    ({ dashboard: this.dashboard, alarms: this.alarms } = addOperations(this, scope.stackName, props));
  }
}

/**
 * What an operator watches on day one (docs/deploy.md#dashboards-and-alarms): alarms on the operations topic for
 * the API's 5xx rate, the p99 turn overhead, Lambda and DynamoDB throttles, every dead-letter queue's depth,
 * analyses past their deadline, each function's errors, refused queue messages and meter events; and one dashboard.
 */
function addOperations(scope: Construct, stackName: string, props: OperationsProps): { dashboard: cloudwatch.Dashboard; alarms: cloudwatch.Alarm[] } {
  if (props.alarmEmail) props.alarmTopic.addSubscription(new snsSubscriptions.EmailSubscription(props.alarmEmail));
  const notify = new cloudwatchActions.SnsAction(props.alarmTopic);
  const alarms: cloudwatch.Alarm[] = [];
  // Named after the stack, so the notification says which deployment and what at a glance.
  const alarm = (id: string, options: cloudwatch.AlarmProps): cloudwatch.Alarm => {
    const created = new cloudwatch.Alarm(scope, id, { alarmName: `${stackName}-${id}`, treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING, ...options });
    created.addAlarmAction(notify);
    created.addOkAction(notify);
    alarms.push(created);
    return created;
  };
  const atLeastOnce = { threshold: 1, comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD, evaluationPeriods: 1 };

  const api = apiMetrics(props);
  alarm('ApiServerErrors', {
    alarmDescription: `More than ${alarmThresholds.serverErrorPercent}% of API requests (HTTP and streaming) answered 5xx for 10 minutes`,
    metric: api.serverErrorPercent,
    threshold: alarmThresholds.serverErrorPercent,
    comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    evaluationPeriods: 2,
  });
  alarm('TurnOverheadP99', {
    alarmDescription: `The platform's own time in a turn (model and tools excluded) above ${alarmThresholds.turnOverheadP99Ms} ms at p99 for 15 minutes`,
    metric: platformMetric(conversationMetrics.turnOverhead, 'p99'),
    threshold: alarmThresholds.turnOverheadP99Ms,
    comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    evaluationPeriods: 3,
  });
  // The functions reserve no concurrency, so Lambda throttles only when the region's shared pool is spent: the
  // account's total is the signal (a per-function sum would also exceed the 10 metrics an alarm may hold).
  const lambdaThrottles = new cloudwatch.Metric({ namespace: 'AWS/Lambda', metricName: 'Throttles', statistic: cloudwatch.Stats.SUM, period, label: 'Lambda throttles (region)' });
  alarm('LambdaThrottles', { alarmDescription: "Lambda throttled invocations: the region's concurrency is spent", metric: lambdaThrottles, ...atLeastOnce });
  const tableThrottles = tableThrottleEvents(props.table);
  alarm('TableThrottles', { alarmDescription: 'DynamoDB throttled reads or writes of the table or its indexes', metric: tableThrottles, ...atLeastOnce });
  for (const { name, queue, what } of props.deadLetterQueues) {
    alarm(`DeadLetters-${name}`, {
      alarmDescription: `${what} landed in a dead-letter queue`,
      metric: queue.metricApproximateNumberOfMessagesVisible({ period, statistic: cloudwatch.Stats.MAXIMUM }),
      ...atLeastOnce,
    });
  }
  alarm('AnalysisDeadline', {
    alarmDescription: 'Analyses ended FAILED with ANALYSIS_DEADLINE_EXCEEDED: the model or the pipeline did not finish within ANALYSIS_DEADLINE_SECONDS',
    metric: platformMetric(analysisMetrics.deadlineExceeded, cloudwatch.Stats.SUM),
    ...atLeastOnce,
  });
  for (const [name, fn] of props.functions) {
    // The handlers answer every failure they know in the envelope or report it per record: an error is a crash or a timeout.
    alarm(`Errors-${name}`, { alarmDescription: `The ${name} function failed: an uncaught error or a timeout`, metric: fn.metricErrors({ period }), ...atLeastOnce });
  }
  alarm('QueueRefusals', {
    alarmDescription: 'A queue refused a message the platform sent (see the error logs beside the metric)',
    metric: platformMetric(queueRefusalsMetric, cloudwatch.Stats.SUM),
    ...atLeastOnce,
  });
  alarm('MeterEventsRefused', {
    alarmDescription: 'Stripe refused a usage event for good: that usage is not billed (see the error logs beside the metric)',
    metric: platformMetric(billingMetrics.meterEventsRefused, cloudwatch.Stats.SUM),
    ...atLeastOnce,
  });

  const dashboard = new cloudwatch.Dashboard(scope, 'Dashboard', {
    dashboardName: `${stackName}-operations`,
    defaultInterval: Duration.hours(3),
  });
  const graph = (title: string, left: cloudwatch.IMetric[], extra: Partial<cloudwatch.GraphWidgetProps> = {}) =>
    new cloudwatch.GraphWidget({ title, left, width: 8, height: 6, ...extra });
  const sum = (definition: MetricDefinition) => platformMetric(definition, cloudwatch.Stats.SUM);
  const line = (value: number, label: string) => ({ leftAnnotations: [{ value, label, color: cloudwatch.Color.RED }] });
  dashboard.addWidgets(new cloudwatch.AlarmStatusWidget({ title: 'Alarms', alarms, width: 24, height: 4, sortBy: cloudwatch.AlarmStatusWidgetSortBy.STATE_UPDATED_TIMESTAMP }));
  dashboard.addWidgets(
    graph('API requests', [api.httpRequests, api.streamingRequests]),
    graph('API 5xx %', [api.serverErrorPercent], line(alarmThresholds.serverErrorPercent, 'alarm')),
    graph('API latency (ms)', [
      props.httpApi.metricLatency({ period, statistic: cloudwatch.Stats.p(50), label: 'HTTP p50' }),
      props.httpApi.metricLatency({ period, statistic: cloudwatch.Stats.p(99), label: 'HTTP p99' }),
      props.streamingApi.metricLatency({ period, statistic: cloudwatch.Stats.p(99), label: 'streaming p99' }),
    ]),
  );
  dashboard.addWidgets(
    graph('Turns', [sum(conversationMetrics.turns), sum(conversationMetrics.turnsFailed)]),
    graph('Turn overhead (ms)', [platformMetric(conversationMetrics.turnOverhead, 'p50'), platformMetric(conversationMetrics.turnOverhead, 'p99')], line(alarmThresholds.turnOverheadP99Ms, 'p99 alarm')),
    graph('Tokens and tool calls', [sum(conversationMetrics.inputTokens), sum(conversationMetrics.outputTokens)], {
      right: [sum(conversationMetrics.toolCalls), sum(conversationMetrics.toolCallsFailed)],
    }),
  );
  dashboard.addWidgets(
    graph('Calls', [sum(conversationMetrics.callMinutes)], {
      right: [platformMetric(conversationMetrics.callMinutes, cloudwatch.Stats.SAMPLE_COUNT, 'Calls ended')],
    }),
    graph('Analyses', [sum(analysisMetrics.completed), sum(analysisMetrics.skipped), sum(analysisMetrics.failed), sum(analysisMetrics.deadlineExceeded)], {
      right: [platformMetric(analysisMetrics.endedLatency, 'p50'), platformMetric(analysisMetrics.endedLatency, 'p99')],
    }),
    graph('Webhooks', [sum(webhookMetrics.delivered), sum(webhookMetrics.attemptsFailed), sum(webhookMetrics.deadLettered)]),
  );
  dashboard.addWidgets(
    graph('Providers: what is acknowledged and not acted on', [sum(whatsappMetrics.unhandledNotifications), sum(billingMetrics.meterEventsRefused)], { width: 16, height: 4 }),
    // Empty without the media worker (mediaWorker.enabled); its autoscaling holds the average at callsPerTask.
    graph('Media worker: active calls per task', [platformMetric(activeCallsMetric, cloudwatch.Stats.AVERAGE, 'average'), platformMetric(activeCallsMetric, cloudwatch.Stats.MAXIMUM, 'busiest task')], {
      width: 8,
      height: 4,
    }),
  );
  const functions = [...props.functions];
  dashboard.addWidgets(
    graph('Lambda errors by function', functions.map(([name, fn]) => fn.metricErrors({ period, label: name })), { width: 12, legendPosition: cloudwatch.LegendPosition.RIGHT }),
    graph('Lambda throttles and concurrency (region)', [lambdaThrottles], {
      width: 12,
      right: [new cloudwatch.Metric({ namespace: 'AWS/Lambda', metricName: 'ConcurrentExecutions', statistic: cloudwatch.Stats.MAXIMUM, period, label: 'Concurrent executions' })],
    }),
  );
  dashboard.addWidgets(
    graph(
      'Dead-letter queues (messages)',
      props.deadLetterQueues.map(({ queue, what }) => queue.metricApproximateNumberOfMessagesVisible({ period, statistic: cloudwatch.Stats.MAXIMUM, label: what })),
      { legendPosition: cloudwatch.LegendPosition.RIGHT, width: 12 },
    ),
    graph('Table throttles and refused queue messages', [tableThrottles, sum(queueRefusalsMetric)]),
    graph('Table capacity (units)', [
      props.table.metricConsumedReadCapacityUnits({ period, statistic: cloudwatch.Stats.SUM, label: 'Read units' }),
      props.table.metricConsumedWriteCapacityUnits({ period, statistic: cloudwatch.Stats.SUM, label: 'Write units' }),
    ], { width: 4 }),
  );

  suppressTracingNagFindings(props.tracedFunctions);
  return { dashboard, alarms };
}

/** A platform metric as CloudWatch holds it: namespace AgentPlatform, dimension `service`. */
export function platformMetric(definition: MetricDefinition, statistic: string, label?: string): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: metricsNamespace,
    metricName: definition.name,
    dimensionsMap: { service: metricsService },
    statistic,
    period,
    label: label ?? `${definition.name} (${statistic})`,
  });
}

/** Requests of both APIs, and the share answered 5xx (0 while fewer than the minimum arrive). */
function apiMetrics(props: Pick<OperationsProps, 'httpApi' | 'streamingApi'>) {
  const httpRequests = props.httpApi.metricCount({ period, statistic: cloudwatch.Stats.SUM, label: 'HTTP API requests' });
  const streamingRequests = props.streamingApi.metricCount({ period, statistic: cloudwatch.Stats.SUM, label: 'Streaming API requests' });
  const requests = '(FILL(httpRequests, 0) + FILL(streamingRequests, 0))';
  const serverErrorPercent = new cloudwatch.MathExpression({
    expression: `IF(${requests} >= ${alarmThresholds.minimumRequests}, 100 * (FILL(httpErrors, 0) + FILL(streamingErrors, 0)) / ${requests}, 0)`,
    usingMetrics: {
      httpRequests,
      streamingRequests,
      httpErrors: props.httpApi.metricServerError({ period, statistic: cloudwatch.Stats.SUM }),
      streamingErrors: props.streamingApi.metricServerError({ period, statistic: cloudwatch.Stats.SUM }),
    },
    label: '5xx % of requests',
    period,
  });
  return { httpRequests, streamingRequests, serverErrorPercent };
}

/** Throttled reads and writes of the table and of each of its indexes: two metrics each, within an alarm's 10. */
function tableThrottleEvents(table: dynamodb.TableV2): cloudwatch.MathExpression {
  const indexes = [undefined, ...tableDefinition.globalSecondaryIndexes.map((index) => index.indexName)];
  const usingMetrics: Record<string, cloudwatch.IMetric> = {};
  indexes.forEach((indexName, position) => {
    for (const metricName of ['ReadThrottleEvents', 'WriteThrottleEvents']) {
      usingMetrics[`${metricName === 'ReadThrottleEvents' ? 'reads' : 'writes'}${position}`] = new cloudwatch.Metric({
        namespace: 'AWS/DynamoDB',
        metricName,
        dimensionsMap: { TableName: table.tableName, ...(indexName ? { GlobalSecondaryIndexName: indexName } : {}) },
        statistic: cloudwatch.Stats.SUM,
        period,
      });
    }
  });
  return new cloudwatch.MathExpression({
    expression: Object.keys(usingMetrics).map((id) => `FILL(${id}, 0)`).join(' + '),
    usingMetrics,
    label: 'Table throttle events',
    period,
  });
}

/** X-Ray's two write actions have no resource type: AWS documents them on "*" (what Tracing.ACTIVE grants). */
function suppressTracingNagFindings(traced: readonly lambda.Function[]): void {
  NagSuppressions.addResourceSuppressions(
    traced.map((fn) => fn.role as iam.Role),
    [
      {
        id: 'AwsSolutions-IAM5',
        reason:
          'X-Ray active tracing: xray:PutTraceSegments and xray:PutTelemetryRecords support no resource-level permission (Service Authorization Reference, AWS X-Ray), so CDK grants them on "*"; only the functions of the request path are traced (test/infra/operations.test.ts).',
        appliesTo: ['Resource::*'],
      },
    ],
    true,
  );
}
