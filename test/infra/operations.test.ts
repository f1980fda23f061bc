/**
 * Operations in the template (docs/deploy.md#dashboards-and-alarms): the alarms and the dashboard of the nested
 * stack, each alarm on the operations topic with the configured e-mail, and X-Ray tracing on the request path.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueConsumers, scheduledFunctions, tableStreamConsumers } from '../../functions/consumers.ts';
import { routeGroups } from '../../functions/route-groups.ts';
import { voiceRelayRoutes } from '../../functions/voice-relay/routes.ts';
import { alarmThresholds, platformMetrics } from '../../infra/operations.ts';
import { checkDeploymentConfig } from '../../infra/deployment-config.ts';
import { AgentPlatformStack } from '../../infra/stack.ts';
import { tableDefinition } from '../../shared/platform/store/table.ts';

interface Resource {
  Type: string;
  Properties: Record<string, any>;
}

const alarmEmail = 'ops@example.com';
const outdir = mkdtempSync(join(tmpdir(), 'operations-test-'));
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

let stack: AgentPlatformStack;
let parent: Record<string, Resource>;
let nested: Record<string, Resource>;
/** The values the main stack hands the nested one, by parameter name. */
let handedOver: Record<string, unknown>;

beforeAll(() => {
  const { context } = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')) as { context: Record<string, unknown> };
  // The alarms read the template, not the bundles: skip bundling.
  stack = new AgentPlatformStack(new App({ context: { ...context, 'aws:cdk:bundling-stacks': [] }, outdir }), 'Ops', { deployment: checkDeploymentConfig({ alarmEmail }) });
  parent = Template.fromStack(stack).toJSON().Resources as Record<string, Resource>;
  nested = Template.fromStack(stack.operations).toJSON().Resources as Record<string, Resource>;
  const nestedStack = Object.values(parent).find((resource) => resource.Type === 'AWS::CloudFormation::Stack');
  handedOver = nestedStack?.Properties.Parameters ?? {};
}, 120_000);

/** A value of the nested template as the main stack gives it: `{Ref: <parameter>}` becomes what the parameter is given. */
const outside = (value: unknown): unknown => {
  const ref = (value as { Ref?: string } | undefined)?.Ref;
  return ref !== undefined && ref in handedOver ? handedOver[ref] : value;
};
const ofType = (resources: Record<string, Resource>, type: string) => Object.entries(resources).filter(([, resource]) => resource.Type === type);
const alarms = (): Record<string, any>[] => ofType(nested, 'AWS::CloudWatch::Alarm').map(([id, alarm]) => ({ id, ...alarm.Properties }));
const idOf = (type: string) => ofType(parent, type).map(([id]) => id);
/** The metrics an alarm reads: its one metric, or those of its metric queries (an expression's, or a labelled one). */
const metricsOf = (alarm: Record<string, any>): { Namespace: string; MetricName: string; Dimensions?: { Name: string; Value: unknown }[]; Stat?: string }[] =>
  alarm.MetricName
    ? [{ Namespace: alarm.Namespace, MetricName: alarm.MetricName, ...(alarm.Dimensions ? { Dimensions: alarm.Dimensions } : {}), Stat: alarm.Statistic ?? alarm.ExtendedStatistic }]
    : (alarm.Metrics ?? []).flatMap((query: any) => (query.MetricStat ? [{ ...query.MetricStat.Metric, Stat: query.MetricStat.Stat }] : []));
const dimension = (metric: { Dimensions?: { Name: string; Value: unknown }[] }, name: string) => outside(metric.Dimensions?.find((candidate) => candidate.Name === name)?.Value);

describe('the operations topic', () => {
  it('is subscribed by the configured e-mail, and every alarm notifies it going into alarm and back to OK', () => {
    const [topicId] = idOf('AWS::SNS::Topic');
    const subscriptions = ofType(parent, 'AWS::SNS::Subscription').map(([, subscription]) => subscription.Properties);
    expect(subscriptions).toEqual([expect.objectContaining({ Protocol: 'email', Endpoint: alarmEmail, TopicArn: { Ref: topicId } })]);
    expect(alarms().length).toBeGreaterThan(0);
    for (const alarm of alarms()) {
      expect(alarm.AlarmName, alarm.id).toMatch(/^Ops-[A-Za-z0-9.-]+$/);
      expect(alarm.AlarmActions.map(outside), alarm.id).toEqual([{ Ref: topicId }]);
      expect(alarm.OKActions.map(outside), alarm.id).toEqual([{ Ref: topicId }]);
      expect(alarm.TreatMissingData, alarm.id).toBe('notBreaching');
    }
  });

  it('keeps the alarms and the dashboard in a nested stack, so the main one stays within 500 resources', () => {
    expect(ofType(parent, 'AWS::CloudWatch::Alarm')).toEqual([]);
    expect(ofType(parent, 'AWS::CloudWatch::Dashboard')).toEqual([]);
    expect(Object.keys(parent).length).toBeLessThan(500);
  });
});

describe('the alarms', () => {
  it("watch each function's errors, every one of the stack's functions", () => {
    const functionIds = idOf('AWS::Lambda::Function');
    const watched = alarms()
      .flatMap((alarm) => metricsOf(alarm).filter((metric) => metric.MetricName === 'Errors').map((metric) => ({ alarm, metric })))
      .map(({ alarm, metric }) => {
        expect(alarm).toMatchObject({ Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold', EvaluationPeriods: 1 });
        expect(metric).toMatchObject({ Namespace: 'AWS/Lambda', Stat: 'Sum' });
        return (dimension(metric, 'FunctionName') as { Ref: string }).Ref;
      });
    expect(watched.sort()).toEqual(functionIds.sort());
    const named = [...routeGroups, voiceRelayRoutes, ...tableStreamConsumers, ...queueConsumers, ...scheduledFunctions];
    expect(functionIds).toHaveLength(named.length);
  });

  it("watch every dead-letter queue's depth from its first message", () => {
    const serialized = JSON.stringify(parent);
    // Dead-letter queues: those a redrive policy, an event source mapping's on-failure or a rule target names.
    const deadLetterIds = new Set(
      [...serialized.matchAll(/"(?:deadLetterTargetArn|Destination|Arn)":\{"Fn::GetAtt":\["([A-Za-z0-9]+)","Arn"\]\}/g)]
        .map((match) => match[1] as string)
        .filter((id) => parent[id]?.Type === 'AWS::SQS::Queue' && !ofType(parent, 'AWS::Lambda::EventSourceMapping').some(([, mapping]) => JSON.stringify(mapping.Properties.EventSourceArn).includes(`"${id}"`))),
    );
    // The stream consumers' failures, the rule targets' failures and the dead letters of each of the nine queues.
    expect(deadLetterIds.size).toBe(11);
    const watched = alarms().flatMap((alarm) =>
      metricsOf(alarm)
        .filter((metric) => metric.MetricName === 'ApproximateNumberOfMessagesVisible')
        .map((metric) => {
          expect(alarm).toMatchObject({ Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold', EvaluationPeriods: 1 });
          expect(metric).toMatchObject({ Namespace: 'AWS/SQS', Stat: 'Maximum' });
          return (dimension(metric, 'QueueName') as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
        }),
    );
    expect(watched.sort()).toEqual([...deadLetterIds].sort());
  });

  it('watch the share of API requests answered 5xx, both APIs together, once enough requests arrive', () => {
    const alarm = alarms().find((candidate) => metricsOf(candidate).some((metric) => metric.MetricName === '5xx'));
    expect(alarm).toMatchObject({ Threshold: alarmThresholds.serverErrorPercent, ComparisonOperator: 'GreaterThanThreshold', EvaluationPeriods: 2 });
    const metrics = metricsOf(alarm!);
    expect(metrics.map((metric) => `${metric.MetricName} ${metric.Stat}`).sort()).toEqual(['5XXError Sum', '5xx Sum', 'Count Sum', 'Count Sum']);
    const [httpApiId] = idOf('AWS::ApiGatewayV2::Api').filter((id) => parent[id]?.Properties.ProtocolType === 'HTTP');
    for (const metric of metrics.filter((candidate) => candidate.Dimensions?.some((entry) => entry.Name === 'ApiId'))) expect(dimension(metric, 'ApiId')).toEqual({ Ref: httpApiId });
    expect(metrics.filter((metric) => metric.Dimensions?.some((entry) => entry.Name === 'ApiName')).map((metric) => dimension(metric, 'ApiName'))).toEqual(['agent-platform-streaming', 'agent-platform-streaming']);
    const expression = alarm!.Metrics.find((query: any) => query.ReturnData).Expression as string;
    expect(expression).toContain(`>= ${alarmThresholds.minimumRequests}`);
  });

  it('watch the p99 of the turn overhead the turns record', () => {
    const alarm = alarms().find((candidate) => metricsOf(candidate).some((metric) => metric.MetricName === 'TurnOverhead'));
    expect(alarm).toMatchObject({ Threshold: alarmThresholds.turnOverheadP99Ms, ComparisonOperator: 'GreaterThanThreshold', EvaluationPeriods: 3 });
    expect(metricsOf(alarm!)).toEqual([{ Namespace: 'AgentPlatform', MetricName: 'TurnOverhead', Dimensions: [{ Name: 'service', Value: 'agent-platform' }], Stat: 'p99' }]);
  });

  it("watch throttles: Lambda's in the region, and the table's and each index's reads and writes", () => {
    const lambda = alarms().find((candidate) => metricsOf(candidate).some((metric) => metric.MetricName === 'Throttles'));
    expect(metricsOf(lambda!)).toEqual([{ Namespace: 'AWS/Lambda', MetricName: 'Throttles', Stat: 'Sum' }]);
    expect(lambda).toMatchObject({ Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold' });
    const table = alarms().find((candidate) => metricsOf(candidate).some((metric) => metric.MetricName === 'ReadThrottleEvents'));
    const [tableId] = idOf('AWS::DynamoDB::GlobalTable');
    const watched = metricsOf(table!).map((metric) => {
      expect(dimension(metric, 'TableName')).toEqual({ Ref: tableId });
      return `${metric.MetricName} ${String(metric.Dimensions?.find((entry) => entry.Name === 'GlobalSecondaryIndexName')?.Value ?? 'table')}`;
    });
    const indexes = ['table', ...tableDefinition.globalSecondaryIndexes.map((index) => index.indexName)];
    expect(watched.sort()).toEqual(indexes.flatMap((index) => [`ReadThrottleEvents ${index}`, `WriteThrottleEvents ${index}`]).sort());
    // CloudWatch takes at most 10 metrics in an alarm.
    expect(table!.Metrics.length - 1).toBeLessThanOrEqual(10);
  });

  it('watch analyses that ended past their deadline, messages a queue refused and usage events Stripe refused, from the first', () => {
    for (const name of ['AnalysisDeadlineExceeded', 'QueueMessagesRefused', 'MeterEventsRefused']) {
      const alarm = alarms().find((candidate) => metricsOf(candidate).some((metric) => metric.MetricName === name));
      expect(alarm, name).toMatchObject({ Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold', EvaluationPeriods: 1 });
      expect(metricsOf(alarm!)).toEqual([{ Namespace: 'AgentPlatform', MetricName: name, Dimensions: [{ Name: 'service', Value: 'agent-platform' }], Stat: 'Sum' }]);
    }
  });
});

describe('the dashboard', () => {
  it("shows every platform metric, each function's errors, every dead-letter queue and the alarms' state", () => {
    const dashboards = ofType(nested, 'AWS::CloudWatch::Dashboard');
    expect(dashboards).toHaveLength(1);
    const [, dashboard] = dashboards[0]!;
    expect(dashboard.Properties.DashboardName).toBe('Ops-operations');
    const body = JSON.stringify(dashboard.Properties.DashboardBody);
    for (const metric of platformMetrics) expect(body, metric.name).toContain(`\\"AgentPlatform\\",\\"${metric.name}\\",\\"service\\",\\"agent-platform\\"`);
    const functionCount = idOf('AWS::Lambda::Function').length;
    expect(body.match(/\\"AWS\/Lambda\\",\\"Errors\\"/g)).toHaveLength(functionCount);
    expect(body.match(/\\"AWS\/SQS\\",\\"ApproximateNumberOfMessagesVisible\\"/g)).toHaveLength(11);
    expect(body).toContain('\\"type\\":\\"alarm\\"');
    for (const alarm of alarms()) expect(body).toContain(`"${alarm.id}"`);
  });
});

describe('tracing', () => {
  const functionOf = (name: string) => {
    const logicalId = stack.getLogicalId(stack.functions.get(name)!.node.defaultChild as never);
    return parent[logicalId]!.Properties;
  };

  it('is X-Ray active on the functions of the request path, Powertools Tracer told so; the consumers are not traced', () => {
    for (const { name } of [...routeGroups, voiceRelayRoutes]) {
      expect(functionOf(name).TracingConfig, name).toEqual({ Mode: 'Active' });
      expect(functionOf(name).Environment.Variables.POWERTOOLS_TRACE_ENABLED, name).toBe('true');
    }
    for (const { name } of [...tableStreamConsumers, ...queueConsumers, ...scheduledFunctions]) {
      expect(functionOf(name).TracingConfig, name).toBeUndefined();
      expect(functionOf(name).Environment.Variables.POWERTOOLS_TRACE_ENABLED, name).toBeUndefined();
    }
  });

  it("is on for the streaming REST API's stage (the HTTP API has no X-Ray integration)", () => {
    const stages = ofType(parent, 'AWS::ApiGateway::Stage').map(([, stage]) => stage.Properties);
    expect(stages).toEqual([expect.objectContaining({ StageName: 'live', TracingEnabled: true })]);
  });
});
