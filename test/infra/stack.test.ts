import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, type CfnElement } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as cloudfront from 'aws-cdk-lib/aws-cloudfront';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lambdaFunctions, memoryMbOf } from '../../functions/lambda-functions.ts';
import { eventRules, queueConsumers, scheduledFunctions, tableStreamConsumers, whatsappInboundQueue } from '../../functions/consumers.ts';
import { assetNames, edgeRoutes } from '../../functions/edge/routes.ts';
import { routeGroups } from '../../functions/route-groups.ts';
import { settingsOf } from '../../functions/settings.ts';
import { voiceRelayRoutes } from '../../functions/voice-relay/routes.ts';
import { whatsappConversationRoutes } from '../../functions/whatsapp-conversations/routes.ts';
import { whatsappNumberRoutes } from '../../functions/whatsapp-numbers/routes.ts';
import { whatsappWebhookRoutes } from '../../functions/whatsapp-webhook/routes.ts';
import { checkDeploymentConfig } from '../../infra/deployment-config.ts';
import { AgentPlatformStack } from '../../infra/stack.ts';
import { routePaths, type RouteGroup } from '../../shared/platform/http/route.ts';
import { tableDefinition } from '../../shared/platform/store/table.ts';

interface Resource {
  Type: string;
  Properties: Record<string, unknown>;
  DeletionPolicy?: string;
}
interface Statement {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
}

const readWriteActions = [
  'dynamodb:BatchGetItem',
  'dynamodb:BatchWriteItem',
  'dynamodb:ConditionCheckItem',
  'dynamodb:DeleteItem',
  'dynamodb:GetItem',
  'dynamodb:PutItem',
  'dynamodb:Query',
  'dynamodb:UpdateItem',
];
const readOnlyActions = ['dynamodb:GetItem', 'dynamodb:Query'];
const writeMethods = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

const asArray = <T>(value: T | T[] | undefined): T[] => (value === undefined ? [] : Array.isArray(value) ? value : [value]);
/** Each route at each path it answers at, its aliases included. */
const allRoutes = routeGroups.flatMap((group) => Object.values(group.routes).flatMap((route) => routePaths(route).map((path) => ({ group, route: { ...route, path } }))));
/** Served by the HTTP API. */
const httpRoutes = allRoutes.filter(({ group }) => !group.streaming);
/** Served by the streaming REST API, behind the same CloudFront base address. */
const streamingRoutes = allRoutes.filter(({ group }) => group.streaming);

/** What CloudFront must route to the REST API: the route path with each `{param}` segment as `*`. */
const pathPatternOf = (path: string) => path.replace(/\{[^/]+\}/g, '*');
/** CloudFront path-pattern semantics: `*` is any run of characters (`/` included), `?` one character. */
const matchesPattern = (pattern: string, path: string) =>
  new RegExp(`^${pattern.replace(/[.+^$()|[\]\\{}]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`).test(path);
/** A concrete path a route answers: each `{param}` filled in. */
const examplePathOf = (path: string) => path.replace(/\{[^/]+\}/g, 'x');

let stack: AgentPlatformStack;
let template: Template;
let resources: Record<string, Resource>;

/** The synthesized assembly (with every bundle) goes to a directory of this run, removed afterwards. */
const outdir = mkdtempSync(join(tmpdir(), 'stack-test-'));
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

beforeAll(() => {
  // The same feature flags as `cdk synth`, so the template under test is the one that deploys.
  const { context } = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')) as { context: Record<string, unknown> };
  stack = new AgentPlatformStack(new App({ context, outdir }), 'Test');
  template = Template.fromStack(stack);
  resources = template.toJSON().Resources as Record<string, Resource>;
  // Bundling every function took over 6 minutes on a shared, busy 2-core machine.
}, 900_000);

function resource(logicalId: string, type: string): Resource {
  const found = resources[logicalId];
  expect(found?.Type, logicalId).toBe(type);
  return found as Resource;
}

function functionIdOf(group: Pick<RouteGroup, 'name'>): string {
  const fn = stack.functions.get(group.name);
  expect(fn, group.name).toBeDefined();
  return stack.getLogicalId(fn?.node.defaultChild as CfnElement);
}

/** The API Gateway v2 routes of one API (the HTTP API, or the voice relay's WebSocket API). */
function routesOfApi(apiType: 'HTTP' | 'WEBSOCKET'): Resource[] {
  const apiIds = Object.entries(resources)
    .filter(([, candidate]) => candidate.Type === 'AWS::ApiGatewayV2::Api' && candidate.Properties.ProtocolType === apiType)
    .map(([id]) => id);
  return Object.values(resources).filter(
    (candidate) => candidate.Type === 'AWS::ApiGatewayV2::Route' && apiIds.includes((candidate.Properties.ApiId as { Ref: string }).Ref),
  );
}

/** Follows an HTTP API route's target to its integration and returns the logical id of the function it invokes. */
function functionBehind(routeKey: string): string {
  const routes = routesOfApi('HTTP').filter((candidate) => candidate.Properties.RouteKey === routeKey);
  expect(routes, routeKey).toHaveLength(1);
  const target = routes[0]?.Properties.Target as { 'Fn::Join': [string, [string, { Ref: string }]] };
  expect(target).toEqual({ 'Fn::Join': ['', ['integrations/', { Ref: expect.any(String) }]] });
  const integration = resource(target['Fn::Join'][1][1].Ref, 'AWS::ApiGatewayV2::Integration');
  expect(integration.Properties).toMatchObject({ IntegrationType: 'AWS_PROXY', PayloadFormatVersion: '2.0' });
  const uri = integration.Properties.IntegrationUri as { 'Fn::GetAtt': [string, string] };
  expect(uri['Fn::GetAtt'][1]).toBe('Arn');
  return uri['Fn::GetAtt'][0];
}

/** The full path of a REST API resource, from its chain of parents up to the root resource. */
function restResourcePath(resourceId: string): string {
  const segments: string[] = [];
  let current: unknown = { Ref: resourceId };
  while ((current as { Ref?: string }).Ref) {
    const found = resource((current as { Ref: string }).Ref, 'AWS::ApiGateway::Resource');
    segments.unshift(found.Properties.PathPart as string);
    current = found.Properties.ParentId;
  }
  expect((current as { 'Fn::GetAtt'?: [string, string] })['Fn::GetAtt']?.[1]).toBe('RootResourceId');
  return `/${segments.join('/')}`;
}

function restMethods(): { id: string; path: string; properties: Record<string, unknown> }[] {
  return Object.entries(resources)
    .filter(([, candidate]) => candidate.Type === 'AWS::ApiGateway::Method')
    .map(([id, method]) => ({
      id,
      path: restResourcePath((method.Properties.ResourceId as { Ref: string }).Ref),
      properties: method.Properties,
    }));
}

/** The logical id of the function a REST API Lambda proxy integration invokes (with response streaming). */
function functionBehindStreamingIntegration(integration: { Uri: unknown }): string {
  const join = (integration.Uri as { 'Fn::Join': [string, unknown[]] })['Fn::Join'][1];
  const getAtt = join.find((part) => typeof part === 'object' && part !== null && 'Fn::GetAtt' in part) as { 'Fn::GetAtt': [string, string] };
  expect(getAtt['Fn::GetAtt'][1]).toBe('Arn');
  expect(join.at(-1)).toBe('/response-streaming-invocations');
  return getAtt['Fn::GetAtt'][0];
}

function policyDocumentsOfFunction(group: Pick<RouteGroup, 'name'>): unknown[] {
  const fn = resource(functionIdOf(group), 'AWS::Lambda::Function');
  const roleId = (fn.Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
  return [
    ...asArray(resource(roleId, 'AWS::IAM::Role').Properties.Policies as { PolicyDocument: unknown }[]).map((policy) => policy.PolicyDocument),
    ...Object.values(resources)
      .filter(
        (policy) =>
          policy.Type === 'AWS::IAM::Policy' &&
          asArray(policy.Properties.Roles as unknown[]).some((role) => JSON.stringify(role) === JSON.stringify({ Ref: roleId })),
      )
      .map((policy) => policy.Properties.PolicyDocument),
  ];
}

function statementsOf(document: unknown): Statement[] {
  return asArray((document as { Statement?: Statement | Statement[] } | undefined)?.Statement);
}

describe('AgentPlatformStack', () => {
  describe('logging and transport', () => {
    it('logs access to both APIs and the distribution, and API Gateway errors without bodies', () => {
      const [restStage] = Object.values(template.findResources('AWS::ApiGateway::Stage')) as Resource[];
      expect(restStage?.Properties.AccessLogSetting).toMatchObject({ DestinationArn: expect.anything(), Format: expect.any(String) });
      expect(restStage?.Properties.MethodSettings).toEqual(
        expect.arrayContaining([expect.objectContaining({ ResourcePath: '/*', HttpMethod: '*', LoggingLevel: 'ERROR', DataTraceEnabled: false })]),
      );
      const [httpStage] = Object.values(template.findResources('AWS::ApiGatewayV2::Stage')) as Resource[];
      expect(httpStage?.Properties.AccessLogSettings).toMatchObject({ DestinationArn: expect.anything() });
      // REST API logging goes through the region's API Gateway CloudWatch role, kept when the stack goes.
      template.resourceCountIs('AWS::ApiGateway::Account', 1);
      const [distribution] = Object.values(template.findResources('AWS::CloudFront::Distribution')) as Resource[];
      expect((distribution?.Properties.DistributionConfig as { Logging: unknown }).Logging).toMatchObject({ Bucket: expect.anything(), Prefix: 'cloudfront/' });
    });

    it('refuses plain-text publishers on the alarm topic and every queue', () => {
      const denies = (Object.values(template.findResources('AWS::SNS::TopicPolicy')) as Resource[])
        .concat(Object.values(template.findResources('AWS::SQS::QueuePolicy')) as Resource[])
        .flatMap((policy) => statementsOf(policy.Properties.PolicyDocument))
        .filter((statement) => statement.Effect === 'Deny' && JSON.stringify(statement).includes('aws:SecureTransport'));
      const queues = Object.keys(template.findResources('AWS::SQS::Queue')).length;
      expect(denies).toHaveLength(queues + 1);
    });

    it('requires TLS 1.2 from viewers on a custom domain, and attaches a given web ACL', () => {
      const { context } = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')) as { context: Record<string, unknown> };
      const app = new App({ context: { ...context, 'aws:cdk:bundling-stacks': [] }, outdir });
      const webAclArn = 'arn:aws:wafv2:us-east-1:123456789012:global/webacl/agent-platform/11111111-2222-3333-4444-555555555555';
      const hardened = new AgentPlatformStack(app, 'Hardened', {
        deployment: checkDeploymentConfig({
          domain: { name: 'api.example.com', certificateArn: 'arn:aws:acm:us-east-1:123456789012:certificate/11111111-2222-3333-4444-555555555555' },
          webAclArn,
        }),
      });
      Template.fromStack(hardened).hasResourceProperties('AWS::CloudFront::Distribution', {
        DistributionConfig: {
          Aliases: ['api.example.com'],
          ViewerCertificate: { MinimumProtocolVersion: 'TLSv1.2_2021', SslSupportMethod: 'sni-only' },
          WebACLId: webAclArn,
        },
      });
    });
  });

  describe('routes', () => {
    it('has streaming routes and HTTP API routes', () => {
      expect(streamingRoutes.length).toBeGreaterThan(0);
      expect(httpRoutes.length).toBeGreaterThan(0);
    });

    it.each(httpRoutes.map(({ group, route }) => [`${route.method} ${route.path}`, group] as const))(
      '%s invokes its group function',
      (routeKey, group) => {
        expect(functionBehind(routeKey)).toBe(functionIdOf(group));
      },
    );

    it('sends $default to the catch-all group', () => {
      const catchAll = routeGroups.filter((group) => group.catchAll);
      expect(catchAll.map((group) => group.name)).toEqual(['edge']);
      expect(functionBehind('$default')).toBe(functionIdOf(catchAll[0] as RouteGroup));
    });

    it('has no other routes', () => {
      expect(routesOfApi('HTTP')).toHaveLength(httpRoutes.length + 1);
    });

    it('lets API Gateway invoke each HTTP API function through one permission for the API, not one per route', () => {
      const httpGroups = routeGroups.filter((group) => !group.streaming);
      for (const group of httpGroups) {
        const fromApiGateway = Object.values(resources).filter(
          (candidate) =>
            candidate.Type === 'AWS::Lambda::Permission' &&
            candidate.Properties.Principal === 'apigateway.amazonaws.com' &&
            JSON.stringify(candidate.Properties.FunctionName).includes(functionIdOf(group)),
        );
        expect(fromApiGateway, group.name).toHaveLength(1);
        expect(JSON.stringify(fromApiGateway[0]?.Properties.SourceArn), group.name).toContain('/*/*/*');
      }
      // CloudFormation refuses a stack of more than 500 resources; each route is one, and it was two with its permission.
      expect(Object.keys(resources).length).toBeLessThanOrEqual(500);
    });

    it.each(streamingRoutes.map(({ route }) => [`${route.method} ${route.path}`] as const))('%s is not on the HTTP API', (routeKey) => {
      const onHttpApi = Object.values(resources).filter(
        (candidate) => candidate.Type === 'AWS::ApiGatewayV2::Route' && candidate.Properties.RouteKey === routeKey,
      );
      expect(onHttpApi).toEqual([]);
    });

    it('throttles every route on the default stage, writes harder than reads', () => {
      const stages = (Object.values(template.findResources('AWS::ApiGatewayV2::Stage')) as Resource[]).filter((candidate) => candidate.Properties.StageName === '$default');
      expect(stages).toHaveLength(1);
      const stage = stages[0]?.Properties as {
        StageName: string;
        DefaultRouteSettings: { ThrottlingRateLimit: number; ThrottlingBurstLimit: number };
        RouteSettings: Record<string, { ThrottlingRateLimit: number; ThrottlingBurstLimit: number }>;
        AccessLogSettings?: { DestinationArn: unknown };
      };
      expect(stage.StageName).toBe('$default');
      expect(stage.DefaultRouteSettings.ThrottlingRateLimit).toBeGreaterThan(0);
      expect(stage.AccessLogSettings?.DestinationArn).toBeDefined();

      const expectedKeys = httpRoutes.map(({ route }) => `${route.method} ${route.path}`).sort();
      expect(Object.keys(stage.RouteSettings).sort()).toEqual(expectedKeys);
      const limits = httpRoutes.map(({ route }) => ({
        write: writeMethods.has(route.method),
        ...stage.RouteSettings[`${route.method} ${route.path}`],
      }));
      const maxWrite = Math.max(...limits.filter((limit) => limit.write).map((limit) => limit.ThrottlingRateLimit ?? NaN));
      const minRead = Math.min(...limits.filter((limit) => !limit.write).map((limit) => limit.ThrottlingRateLimit ?? NaN));
      expect(maxWrite).toBeLessThan(minRead);
      for (const limit of limits) expect(limit.ThrottlingBurstLimit).toBeGreaterThanOrEqual(limit.ThrottlingRateLimit ?? Infinity);
    });
  });

  describe('streaming API', () => {
    it('is one regional REST API with a throttled `live` stage and no authorizer', () => {
      template.resourceCountIs('AWS::ApiGateway::RestApi', 1);
      const [api] = Object.values(template.findResources('AWS::ApiGateway::RestApi')) as Resource[];
      expect(api?.Properties.EndpointConfiguration).toEqual({ Types: ['REGIONAL'] });
      template.resourceCountIs('AWS::ApiGateway::Authorizer', 0);

      const stages = Object.values(template.findResources('AWS::ApiGateway::Stage')) as Resource[];
      expect(stages).toHaveLength(1);
      const settings = stages[0]?.Properties.MethodSettings as {
        HttpMethod: string;
        ResourcePath: string;
        ThrottlingRateLimit: number;
        ThrottlingBurstLimit: number;
      }[];
      expect(stages[0]?.Properties.StageName).toBe('live');
      const stageDefault = settings.find((setting) => setting.ResourcePath === '/*' && setting.HttpMethod === '*');
      expect(stageDefault?.ThrottlingRateLimit).toBeGreaterThan(0);
      const httpStage = (Object.values(template.findResources('AWS::ApiGatewayV2::Stage')) as Resource[])[0]?.Properties as {
        RouteSettings: Record<string, { ThrottlingRateLimit: number }>;
      };
      const httpRate = (writes: boolean) =>
        Math.max(
          ...httpRoutes
            .filter(({ route }) => writeMethods.has(route.method) === writes)
            .map(({ route }) => httpStage.RouteSettings[`${route.method} ${route.path}`]?.ThrottlingRateLimit ?? NaN),
        );
      for (const { route } of streamingRoutes) {
        const setting = settings.find(
          (candidate) => candidate.HttpMethod === route.method && candidate.ResourcePath === `/${route.path.replaceAll('/', '~1')}`,
        );
        expect(setting, `${route.method} ${route.path}`).toBeDefined();
        // As strict as the HTTP API's routes of the same kind: writes as its writes, reads (the event stream) as its reads.
        expect(setting?.ThrottlingRateLimit).toBeLessThanOrEqual(httpRate(writeMethods.has(route.method)));
        expect(setting?.ThrottlingBurstLimit).toBeGreaterThanOrEqual(setting?.ThrottlingRateLimit ?? Infinity);
      }
    });

    it.each(streamingRoutes.map(({ group, route }) => [`${route.method} ${route.path}`, group, route] as const))(
      '%s streams from its group function',
      (_routeKey, group, route) => {
        const methods = restMethods().filter((method) => method.path === route.path && method.properties.HttpMethod === route.method);
        expect(methods).toHaveLength(1);
        const method = methods[0]?.properties as { AuthorizationType: string; Integration: Record<string, unknown> & { Uri: unknown } };
        expect(method.AuthorizationType).toBe('NONE');
        expect(method.Integration).toMatchObject({ Type: 'AWS_PROXY', IntegrationHttpMethod: 'POST', ResponseTransferMode: 'STREAM' });
        // Beyond the 29 s of a buffered integration, within the 15 minutes a stream may last.
        expect(method.Integration.TimeoutInMillis).toBeGreaterThan(29_000);
        expect(method.Integration.TimeoutInMillis).toBeLessThanOrEqual(900_000);
        expect(functionBehindStreamingIntegration(method.Integration)).toBe(functionIdOf(group));
      },
    );

    it('has methods only on streaming route paths, each streaming to that route group', () => {
      const methods = restMethods();
      expect(methods.length).toBeGreaterThanOrEqual(streamingRoutes.length);
      for (const method of methods) {
        const owners = streamingRoutes.filter(({ route }) => route.path === method.path);
        expect(owners.length, method.path).toBeGreaterThan(0);
        expect([...owners.map(({ route }) => route.method), 'ANY']).toContain(method.properties.HttpMethod);
        const integration = method.properties.Integration as Record<string, unknown> & { Uri: unknown };
        expect(integration).toMatchObject({ Type: 'AWS_PROXY', ResponseTransferMode: 'STREAM' });
        expect(owners.map(({ group }) => functionIdOf(group))).toContain(functionBehindStreamingIntegration(integration));
      }
    });

  });

  describe('distribution', () => {
    const cachingDisabled = cloudfront.CachePolicy.CACHING_DISABLED.cachePolicyId;
    const allViewerExceptHost = cloudfront.OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER.originRequestPolicyId;
    const allMethods = ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT'];

    interface Behavior {
      PathPattern?: string;
      TargetOriginId: string;
      CachePolicyId: string;
      OriginRequestPolicyId: string;
      AllowedMethods: string[];
      ViewerProtocolPolicy: string;
    }
    interface Config {
      DefaultCacheBehavior: Behavior;
      CacheBehaviors?: Behavior[];
      Origins: { Id: string; DomainName: unknown; OriginPath?: unknown }[];
    }
    const config = (): Config => {
      const distributions = Object.values(template.findResources('AWS::CloudFront::Distribution')) as Resource[];
      expect(distributions).toHaveLength(1);
      return distributions[0]?.Properties.DistributionConfig as Config;
    };
    const originOf = (behavior: Behavior) => {
      const origin = config().Origins.find((candidate) => candidate.Id === behavior.TargetOriginId);
      expect(origin, behavior.TargetOriginId).toBeDefined();
      return origin as Config['Origins'][number];
    };
    const expectNoCache = (behavior: Behavior) => {
      expect(behavior.CachePolicyId).toBe(cachingDisabled);
      expect(behavior.OriginRequestPolicyId).toBe(allViewerExceptHost);
      expect([...behavior.AllowedMethods].sort()).toEqual(allMethods);
      expect(behavior.ViewerProtocolPolicy).toBe('https-only');
    };
    const restApiId = () => Object.keys(template.findResources('AWS::ApiGateway::RestApi'))[0] as string;

    it('sends everything by default to the HTTP API, uncached', () => {
      const behavior = config().DefaultCacheBehavior;
      expectNoCache(behavior);
      expect(originOf(behavior).DomainName).toEqual({
        'Fn::Select': [2, { 'Fn::Split': ['/', { 'Fn::GetAtt': [expect.stringMatching(/^HttpApi/), 'ApiEndpoint'] }] }],
      });
    });

    it('sends each streaming route path to the REST API stage, uncached', () => {
      const behaviors = config().CacheBehaviors ?? [];
      const expected = [...new Set(streamingRoutes.map(({ route }) => pathPatternOf(route.path)))].sort();
      expect(behaviors.map((behavior) => behavior.PathPattern).sort()).toEqual(expected);
      for (const behavior of behaviors) {
        expectNoCache(behavior);
        const origin = originOf(behavior);
        expect(JSON.stringify(origin.DomainName)).toContain(`{"Ref":"${restApiId()}"}`);
        // The stage name is the origin path, so the public path is the route path.
        expect(JSON.stringify(origin.OriginPath)).toMatch(/"Ref":"StreamingApiDeploymentStage/);
      }
    });

    it('routes every streaming route to the REST API and no HTTP API route away from the HTTP API', () => {
      const patterns = (config().CacheBehaviors ?? []).map((behavior) => behavior.PathPattern as string);
      for (const { route } of streamingRoutes) {
        expect(patterns.some((pattern) => matchesPattern(pattern, examplePathOf(route.path))), route.path).toBe(true);
      }
      for (const { route } of httpRoutes) {
        expect(patterns.filter((pattern) => matchesPattern(pattern, examplePathOf(route.path))), route.path).toEqual([]);
      }
    });
  });

  describe('functions', () => {
    it('has exactly one function per route group, per stream consumer, per queue consumer and per schedule, and no helper functions', () => {
      const owners = [...routeGroups, ...tableStreamConsumers, ...queueConsumers, ...scheduledFunctions, voiceRelayRoutes];
      template.resourceCountIs('AWS::Lambda::Function', owners.length);
      expect(new Set(owners.map(functionIdOf)).size).toBe(owners.length);
    });

    it('subscribes each stream consumer to exactly the records it selects, with retries and a dead-letter queue', () => {
      for (const consumer of tableStreamConsumers) {
        const mappings = template.findResources('AWS::Lambda::EventSourceMapping', {
          Properties: { FunctionName: { Ref: functionIdOf(consumer) } },
        });
        const [mapping] = Object.values(mappings) as { Properties: Record<string, any> }[];
        expect(Object.keys(mappings), consumer.name).toHaveLength(1);
        expect(mapping?.Properties).toMatchObject({
          FunctionResponseTypes: ['ReportBatchItemFailures'],
          BisectBatchOnFunctionError: true,
          DestinationConfig: { OnFailure: { Destination: expect.anything() } },
        });
        const pattern = JSON.parse(mapping?.Properties.FilterCriteria.Filters[0].Pattern);
        expect(pattern).toEqual(
          consumer.select.records === 'inserts'
            ? { eventName: ['INSERT'], dynamodb: { NewImage: { entity: { S: consumer.select.entities } } } }
            : {
                eventName: ['REMOVE'],
                userIdentity: { type: ['Service'], principalId: ['dynamodb.amazonaws.com'] },
                dynamodb: { OldImage: { entity: { S: consumer.select.entities } } },
              },
        );
        expect(JSON.stringify(mapping?.Properties.EventSourceArn)).toContain('StreamArn');
      }
    });

    it.each(tableStreamConsumers.map((consumer) => [consumer.name, consumer] as const))(
      '%s may read and write table items only if it works on the table',
      (_name, consumer) => {
        const itemActions = policyDocumentsOfFunction(consumer)
          .flatMap(statementsOf)
          .flatMap((statement) => asArray(statement.Action))
          .filter((action) => readWriteActions.includes(action));
        expect([...new Set(itemActions)].sort()).toEqual(consumer.worksOnTable ? readWriteActions : []);
      },
    );

    it('lets the event publishers, and only them, put events on the platform bus', () => {
      template.resourceCountIs('AWS::Events::EventBus', 1);
      const [busId] = Object.keys(template.findResources('AWS::Events::EventBus'));
      for (const consumer of tableStreamConsumers) {
        const fn = resource(functionIdOf(consumer), 'AWS::Lambda::Function');
        const variables = (fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
        if (consumer.publishesEvents) expect(variables.EVENT_BUS_NAME, consumer.name).toEqual({ Ref: busId });
        else expect(variables.EVENT_BUS_NAME, consumer.name).toBeUndefined();
      }
      const putters = Object.values(template.findResources('AWS::IAM::Policy')).filter((policy) =>
        JSON.stringify(policy).includes('events:PutEvents'),
      );
      expect(putters).toHaveLength(tableStreamConsumers.filter((consumer) => consumer.publishesEvents).length);
    });

    it('feeds each queue consumer from its queue, with partial batch failures, a dead-letter queue, and the right to requeue', () => {
      for (const consumer of queueConsumers) {
        const mappings = Object.values(
          template.findResources('AWS::Lambda::EventSourceMapping', { Properties: { FunctionName: { Ref: functionIdOf(consumer) } } }),
        ) as { Properties: Record<string, any> }[];
        expect(mappings, consumer.name).toHaveLength(1);
        expect(mappings[0]?.Properties).toMatchObject({ BatchSize: consumer.batchSize, FunctionResponseTypes: ['ReportBatchItemFailures'] });
        const queueId = mappings[0]?.Properties.EventSourceArn['Fn::GetAtt'][0] as string;
        const queue = resource(queueId, 'AWS::SQS::Queue');
        expect(queue.Properties.VisibilityTimeout).toBe(consumer.queue.visibilityTimeoutSeconds);
        // Never below the function's timeout (a running batch would reappear), and only a margin above it, so a
        // crashed invocation's messages come back within seconds.
        expect(queue.Properties.VisibilityTimeout).toBeGreaterThan(consumer.timeoutSeconds);
        expect(queue.Properties.VisibilityTimeout).toBeLessThanOrEqual(consumer.timeoutSeconds + 15);
        expect(queue.Properties.RedrivePolicy).toMatchObject({ maxReceiveCount: consumer.queue.maxReceiveCount });
        const fn = resource(functionIdOf(consumer), 'AWS::Lambda::Function');
        expect(fn.Properties.Timeout).toBe(consumer.timeoutSeconds);
        const variables = (fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
        if (consumer.queueUrlVariable) {
          expect(variables[consumer.queueUrlVariable]).toEqual({ Ref: queueId });
          const sends = policyDocumentsOfFunction(consumer as unknown as RouteGroup)
            .flatMap(statementsOf)
            .filter((statement) => asArray(statement.Action).includes('sqs:SendMessage'));
          expect(JSON.stringify(sends.map((statement) => statement.Resource))).toContain(queueId);
        }
      }
    });

    it('routes the bus events each rule matches to its queue, retrying for 24 hours before a dead-letter queue', () => {
      const [busId] = Object.keys(template.findResources('AWS::Events::EventBus'));
      // The platform bus's rules; the S3 upload rule and the schedules are tested with the knowledge uploads.
      const rules = (Object.values(template.findResources('AWS::Events::Rule')) as { Properties: Record<string, any> }[]).filter((rule) => rule.Properties.EventBusName);
      expect(rules).toHaveLength(eventRules.length);
      for (const rule of eventRules) {
        const found = rules.find((candidate) => candidate.Properties.Description === rule.description);
        expect(found?.Properties.EventBusName).toEqual({ Ref: busId });
        expect(found?.Properties.EventPattern).toEqual({ source: rule.pattern.source });
        const [target] = found?.Properties.Targets as Record<string, any>[];
        expect(target).toMatchObject({ RetryPolicy: { MaximumEventAgeInSeconds: 86_400 }, DeadLetterConfig: { Arn: expect.anything() } });
        const queueId = target?.Arn['Fn::GetAtt'][0] as string;
        expect(resource(queueId, 'AWS::SQS::Queue').Properties.VisibilityTimeout).toBe(rule.target.visibilityTimeoutSeconds);
        // The queue's policy lets EventBridge send to it.
        const policies = Object.values(template.findResources('AWS::SQS::QueuePolicy')).filter((policy) => JSON.stringify(policy).includes(queueId));
        expect(JSON.stringify(policies)).toContain('events.amazonaws.com');
      }
    });

    it('gives a route group or stream consumer the URL of each queue it sends to, and the right to send there only', () => {
      for (const group of [...routeGroups, ...tableStreamConsumers]) {
        const fn = resource(functionIdOf(group), 'AWS::Lambda::Function');
        const variables = (fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
        const sends = policyDocumentsOfFunction(group as RouteGroup)
          .flatMap(statementsOf)
          .filter((statement) => asArray(statement.Action).some((action) => action.startsWith('sqs:')));
        const declared = Object.keys(group.queueUrls ?? {});
        // A stream consumer may also send its failed batches to the stream's dead-letter queue.
        if (declared.length === 0 && !('select' in group)) expect(sends, group.name).toEqual([]);
        for (const variable of declared) {
          expect(variables[variable], `${group.name} ${variable}`).toEqual({ Ref: expect.any(String) });
          expect(JSON.stringify(sends.map((statement) => statement.Resource))).toContain((variables[variable] as { Ref: string }).Ref);
        }
      }
    });

    it('runs every function on Node.js 24 on arm64, with a month of logs and the memory its declaration gives it', () => {
      template.allResourcesProperties('AWS::Lambda::Function', { Runtime: 'nodejs24.x', Architectures: ['arm64'] });
      expect(lambdaFunctions.map((fn) => fn.name).sort()).toEqual([...stack.functions.keys()].sort());
      for (const { name, memoryMb } of lambdaFunctions) {
        expect(resource(functionIdOf({ name }), 'AWS::Lambda::Function').Properties.MemorySize, name).toBe(memoryMb);
      }
      // The functions that run turns keep the CPU share of 1 GB (docs/performance.md#bundles-init-and-memory).
      for (const name of ['chat-messages', 'voice-relay', 'whatsapp-inbound']) expect(memoryMbOf(name), name).toBe(1024);
      for (const group of routeGroups) {
        const fn = resource(functionIdOf(group), 'AWS::Lambda::Function');
        // HTTP API integrations time out after 30 s; a streaming function may run as long as its stream (15 min).
        expect(fn.Properties.Timeout, group.name).toBe(group.streaming ? 900 : 29);
        const logGroup = (fn.Properties.LoggingConfig as { LogGroup: { Ref: string } }).LogGroup.Ref;
        expect(resource(logGroup, 'AWS::Logs::LogGroup').Properties.RetentionInDays).toBe(30);
      }
    });

    it.each(routeGroups.map((group) => [group.name, group] as const))(
      '%s has no managed policy, writes logs to its own log group only, and names each index it may read',
      (_name, group) => {
        const fn = resource(functionIdOf(group), 'AWS::Lambda::Function');
        const roleId = (fn.Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
        expect(resource(roleId, 'AWS::IAM::Role').Properties.ManagedPolicyArns).toBeUndefined();
        const statements = policyDocumentsOfFunction(group).flatMap(statementsOf);
        const logs = statements.filter((statement) => asArray(statement.Action).some((action) => action.startsWith('logs:')));
        const logGroup = (fn.Properties.LoggingConfig as { LogGroup: { Ref: string } }).LogGroup.Ref;
        expect(logs).toHaveLength(1);
        expect(asArray(logs[0]?.Action).sort()).toEqual(['logs:CreateLogStream', 'logs:PutLogEvents']);
        expect(logs[0]?.Resource).toEqual({ 'Fn::GetAtt': [logGroup, 'Arn'] });
        const tableTargets = JSON.stringify(
          statements.filter((statement) => asArray(statement.Action).some((action) => action.startsWith('dynamodb:'))).map((statement) => statement.Resource),
        );
        expect(tableTargets).not.toContain('/index/*');
        for (const index of tableDefinition.globalSecondaryIndexes) expect(tableTargets).toContain(`/index/${index.indexName}`);
      },
    );

    it.each(routeGroups.map((group) => [group.name, group] as const))(
      '%s may use only the DynamoDB actions it needs',
      (_name, group) => {
        const documents = policyDocumentsOfFunction(group);
        const actions = documents
          .flatMap(statementsOf)
          .flatMap((statement) => asArray(statement.Action))
          .filter((action) => action.toLowerCase().startsWith('dynamodb:'));
        expect([...new Set(actions)].sort()).toEqual(group.catchAll ? readOnlyActions : readWriteActions);
      },
    );

    it.each(routeGroups.map((group) => [group.name, group] as const))('%s gets the turn deadline only if it runs turns', (_name, group) => {
      const variables = (resource(functionIdOf(group), 'AWS::Lambda::Function').Properties.Environment as { Variables: Record<string, unknown> }).Variables;
      // The turn deadline stays under CloudFront's 120 s wait for a first byte, for the functions that run turns.
      expect(variables.TURN_TIMEOUT_SECONDS, group.name).toBe(group.runsTurns ? '110' : undefined);
    });

    it('lets no function invoke or rerank with Bedrock while the deployment configures no Bedrock model', () => {
      // With models configured, each is named: test/infra/deployment.test.ts.
      const bedrock = Object.values(resources)
        .filter((candidate) => candidate.Type === 'AWS::IAM::Policy')
        .flatMap((policy) => statementsOf(policy.Properties.PolicyDocument))
        .filter((statement) => asArray(statement.Action).some((action) => action.startsWith('bedrock:')));
      expect(bedrock).toEqual([]);
    });

    it('gives S3 Vectors rights by need: ingestion builds indexes, the knowledge routes query and delete, turns only query', () => {
      const vectorActionsOf = (name: string) =>
        policyDocumentsOfFunction({ name })
          .flatMap(statementsOf)
          .filter((statement) => asArray(statement.Action).some((action) => action.startsWith('s3vectors:')));
      const query = ['s3vectors:GetVectors', 's3vectors:ListVectors', 's3vectors:QueryVectors'];
      const expected: Record<string, string[]> = {
        'knowledge-ingestion': [...query, 's3vectors:CreateIndex', 's3vectors:DeleteIndex', 's3vectors:DeleteVectors', 's3vectors:GetIndex', 's3vectors:PutVectors'].sort(),
        knowledge: [...query, 's3vectors:DeleteVectors'].sort(),
        ...Object.fromEntries(routeGroups.filter((group) => group.runsTurns).map((group) => [group.name, query])),
        ...Object.fromEntries(queueConsumers.filter((consumer) => consumer.queriesKnowledge).map((consumer) => [consumer.name, query])),
      };
      const names = [...routeGroups.map((group) => group.name), ...queueConsumers.map((consumer) => consumer.name), ...tableStreamConsumers.map((consumer) => consumer.name)];
      for (const name of names) {
        const statements = vectorActionsOf(name);
        if (!expected[name]) {
          expect(statements, name).toEqual([]);
          continue;
        }
        expect(statements, name).toHaveLength(1);
        expect(asArray(statements[0]!.Action).sort(), name).toEqual(expected[name]);
        expect(JSON.stringify(statements[0]!.Resource), name).toMatch(/KnowledgeVectors.*VectorBucketArn.*\/index\/\*/);
      }
      expect(Object.keys(template.findResources('AWS::S3Vectors::VectorBucket'))).toHaveLength(1);
    });

    it('keeps BM25 snapshots in a private bucket: whoever queries stores reads and writes ks- objects, only ingestion deletes them', () => {
      const [bucketId, bucket] = Object.entries(template.findResources('AWS::S3::Bucket')).find(([id]) => id.startsWith('KnowledgeSnapshots'))!;
      expect(bucket.Properties.PublicAccessBlockConfiguration).toMatchObject({ BlockPublicAcls: true, RestrictPublicBuckets: true });
      expect(bucket.Properties.LifecycleConfiguration.Rules).toEqual([expect.objectContaining({ ExpirationInDays: 30, Status: 'Enabled' })]);
      const snapshotActionsOf = (name: string) =>
        policyDocumentsOfFunction({ name })
          .flatMap(statementsOf)
          .filter((statement) => JSON.stringify(statement.Resource).includes(bucketId))
          .flatMap((statement) => asArray(statement.Action))
          .sort();
      const queries = ['s3:GetObject', 's3:ListBucket', 's3:PutObject'];
      expect(snapshotActionsOf('knowledge-ingestion')).toEqual(['s3:DeleteObject', ...queries]);
      expect(snapshotActionsOf('knowledge')).toEqual(queries);
      for (const group of routeGroups.filter((candidate) => candidate.runsTurns)) expect(snapshotActionsOf(group.name), group.name).toEqual(queries);
      for (const group of routeGroups.filter((candidate) => !candidate.runsTurns && !candidate.usesKnowledge)) expect(snapshotActionsOf(group.name), group.name).toEqual([]);
    });

    it('grants no DynamoDB wildcard action and no DynamoDB action on every resource', () => {
      const documents = Object.values(resources).flatMap((candidate) => {
        if (candidate.Type === 'AWS::IAM::Policy' || candidate.Type === 'AWS::IAM::ManagedPolicy') return [candidate.Properties.PolicyDocument];
        if (candidate.Type === 'AWS::IAM::Role') {
          return asArray(candidate.Properties.Policies as { PolicyDocument: unknown }[]).map((policy) => policy.PolicyDocument);
        }
        return [];
      });
      const statements = documents.flatMap(statementsOf);
      expect(statements.length).toBeGreaterThan(0);
      for (const statement of statements) {
        const actions = asArray(statement.Action);
        const dynamo = actions.filter((action) => action === '*' || action.toLowerCase().startsWith('dynamodb:'));
        if (dynamo.length === 0) continue;
        for (const action of dynamo) expect(action).not.toContain('*');
        expect(asArray(statement.Resource)).not.toContain('*');
      }
    });
  });

  describe('table', () => {
    it('is the single table of tableDefinition', () => {
      const string = (name: string) => ({ AttributeName: name, AttributeType: 'S' });
      const keys = (hash: string, range: string) => [
        { AttributeName: hash, KeyType: 'HASH' },
        { AttributeName: range, KeyType: 'RANGE' },
      ];
      // TableV2 synthesizes a global table, even with a single replica.
      template.resourceCountIs('AWS::DynamoDB::GlobalTable', 1);
      template.resourceCountIs('AWS::DynamoDB::Table', 0);
      const [table] = Object.values(template.findResources('AWS::DynamoDB::GlobalTable')) as Resource[];
      expect(table?.DeletionPolicy).toBe('Retain');
      const properties = table?.Properties as Record<string, unknown> & {
        AttributeDefinitions: unknown[];
        Replicas: { PointInTimeRecoverySpecification?: unknown }[];
      };
      expect(properties).toMatchObject({
        KeySchema: keys(tableDefinition.partitionKey, tableDefinition.sortKey),
        BillingMode: 'PAY_PER_REQUEST',
        TimeToLiveSpecification: { AttributeName: tableDefinition.timeToLiveAttribute, Enabled: true },
        StreamSpecification: { StreamViewType: 'NEW_AND_OLD_IMAGES' },
        GlobalSecondaryIndexes: tableDefinition.globalSecondaryIndexes.map((index) => ({
          IndexName: index.indexName,
          KeySchema: keys(index.partitionKey, index.sortKey),
          Projection: { ProjectionType: 'ALL' },
        })),
      });
      const attributes: string[] = [
        tableDefinition.partitionKey,
        tableDefinition.sortKey,
        ...tableDefinition.globalSecondaryIndexes.flatMap((index) => [index.partitionKey, index.sortKey]),
      ];
      expect(properties.AttributeDefinitions).toEqual(expect.arrayContaining(attributes.map(string)));
      expect(properties.AttributeDefinitions).toHaveLength(attributes.length);
      expect(properties.Replicas).toHaveLength(1);
      for (const replica of properties.Replicas) {
        expect(replica.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
      }
    });
  });

  it('outputs the public base address, both APIs for debugging, the table, the event bus, the alarm topic and the dashboard', () => {
    const outputs = template.findOutputs('*') as Record<string, { Value: unknown }>;
    expect(Object.keys(outputs).sort()).toEqual(['AlarmTopicArn', 'ApiBaseUrl', 'ApiUrl', 'DashboardName', 'EventBusName', 'RecordingsBucket', 'StreamingApiUrl', 'TableName', 'VoiceRelayUrl']);
    expect(outputs.EventBusName?.Value).toEqual({ Ref: Object.keys(template.findResources('AWS::Events::EventBus'))[0] });
    expect(outputs.ApiBaseUrl?.Value).toEqual({
      'Fn::Join': ['', ['https://', { 'Fn::GetAtt': [Object.keys(template.findResources('AWS::CloudFront::Distribution'))[0], 'DomainName'] }]],
    });
  });
});

describe('the secrets key', () => {
  it('is one customer-managed key with yearly rotation and an alias, kept when the stack goes', () => {
    const keys = Object.entries(resources).filter(([, candidate]) => candidate.Type === 'AWS::KMS::Key');
    expect(keys).toHaveLength(1);
    const [keyId, key] = keys[0] as [string, Resource];
    expect(key.Properties.EnableKeyRotation).toBe(true);
    expect(key.DeletionPolicy).toBe('Retain');
    template.hasResourceProperties('AWS::KMS::Alias', { AliasName: 'alias/Test/secrets', TargetKeyId: { 'Fn::GetAtt': [keyId, 'Arn'] } });
  });

  it('lets the functions that create or rotate secrets only make data keys, and those that sign only unwrap them', () => {
    const [keyId] = Object.keys(template.findResources('AWS::KMS::Key'));
    const keyArn = { 'Fn::GetAtt': [keyId, 'Arn'] };
    const functions = [
      ...routeGroups.map((group) => ({ unit: group, seals: group.sealsSecrets === true, opens: group.runsTurns === true || group.opensSecrets === true })),
      { unit: voiceRelayRoutes, seals: false, opens: true },
      ...tableStreamConsumers.map((consumer) => ({ unit: consumer, seals: false, opens: false })),
      ...queueConsumers.map((consumer) => ({ unit: consumer, seals: false, opens: consumer.opensSecrets === true })),
    ];
    for (const { unit, seals, opens } of functions) {
      const kmsStatements = policyDocumentsOfFunction(unit as RouteGroup)
        .flatMap(statementsOf)
        .filter((statement) => asArray(statement.Action).some((action) => action.startsWith('kms:')));
      const expected = [...(seals ? ['kms:GenerateDataKey'] : []), ...(opens ? ['kms:Decrypt'] : [])].sort();
      expect(kmsStatements.flatMap((statement) => asArray(statement.Action)).sort(), unit.name).toEqual(expected);
      for (const statement of kmsStatements) expect(statement.Resource, unit.name).toEqual(keyArn);
      // The key's id goes to every function whose code can reach the cipher (shared/runtime.ts builds it); the right to use it only to these.
      const variables = (resource(functionIdOf(unit), 'AWS::Lambda::Function').Properties.Environment as { Variables: Record<string, unknown> }).Variables;
      expect(variables.SECRETS_KMS_KEY_ID, unit.name).toEqual(settingsOf(unit.name).includes('SECRETS_KMS_KEY_ID') ? keyArn : undefined);
    }
    const names = (filter: (entry: (typeof functions)[number]) => boolean) => functions.filter(filter).map((entry) => entry.unit.name).sort();
    expect(names((entry) => entry.seals)).toEqual(['agents', 'models', 'phone-numbers', 'tools', 'webhooks', 'whatsapp-numbers']);
    expect(names((entry) => entry.opens)).toEqual([
      'call-backstop',
      'call-campaigns',
      'campaign-dispatcher',
      'carrier-callbacks',
      'chat-messages',
      'phone-numbers',
      'replay',
      'voice-relay',
      'webhook-delivery',
      'whatsapp-conversations',
      'whatsapp-inbound',
      'whatsapp-webhook',
    ]);
  });

  it('keeps the default key policy (the account), so the functions\' IAM policies alone say who may use the key', () => {
    const [key] = Object.values(template.findResources('AWS::KMS::Key')) as Resource[];
    const statements = statementsOf((key?.Properties.KeyPolicy as unknown) ?? {});
    expect(statements).toHaveLength(1);
    expect(JSON.stringify((statements[0] as Statement & { Principal: unknown }).Principal)).toContain(':root');
  });
});

describe('voice', () => {
  const bucketId = () => Object.keys(template.findResources('AWS::S3::Bucket')).find((id) => id.startsWith('Recordings')) as string;
  const statementsOfUnit = (name: string) => policyDocumentsOfFunction({ name }).flatMap(statementsOf);
  const allFunctionNames = [...routeGroups, ...tableStreamConsumers, ...queueConsumers, voiceRelayRoutes].map((unit) => unit.name);

  it("serves ConversationRelay's WebSocket API: $connect, $disconnect and $default to the relay function, on a throttled, logged `live` stage", () => {
    const routes = routesOfApi('WEBSOCKET');
    expect(routes.map((route) => route.Properties.RouteKey).sort()).toEqual(['$connect', '$default', '$disconnect']);
    const relayId = functionIdOf(voiceRelayRoutes);
    for (const route of routes) {
      const integrationId = ((route.Properties.Target as { 'Fn::Join': [string, [string, { Ref: string }]] })['Fn::Join'][1][1]).Ref;
      expect(JSON.stringify(resource(integrationId, 'AWS::ApiGatewayV2::Integration').Properties.IntegrationUri)).toContain(relayId);
    }
    const stage = (Object.values(template.findResources('AWS::ApiGatewayV2::Stage')) as Resource[]).find((candidate) => candidate.Properties.StageName === 'live');
    expect(stage?.Properties).toMatchObject({ AutoDeploy: true, DefaultRouteSettings: { ThrottlingRateLimit: expect.any(Number) }, AccessLogSettings: { DestinationArn: expect.anything() } });
  });

  it('lets only the relay function post to connections, of this API\'s live stage', () => {
    for (const name of allFunctionNames) {
      const manages = statementsOfUnit(name).filter((statement) => asArray(statement.Action).includes('execute-api:ManageConnections'));
      if (name !== voiceRelayRoutes.name) expect(manages, name).toEqual([]);
      else expect(JSON.stringify(manages[0]?.Resource)).toMatch(/VoiceRelayApi[A-Za-z0-9]+"\},"\/live\/\*\/@connections\/\*"/);
    }
    const variables = (resource(functionIdOf(voiceRelayRoutes), 'AWS::Lambda::Function').Properties.Environment as { Variables: Record<string, unknown> }).Variables;
    expect(Object.keys(variables)).toEqual(expect.arrayContaining(['VOICE_RELAY_URL', 'VOICE_RELAY_MANAGEMENT_ENDPOINT', 'TURN_TIMEOUT_SECONDS', 'SECRETS_KMS_KEY_ID']));
  });

  it('keeps recordings in an encrypted, private, TLS-only bucket that expires them after a year and is retained', () => {
    const bucket = resource(bucketId(), 'AWS::S3::Bucket');
    expect(bucket.DeletionPolicy).toBe('Retain');
    expect(bucket.Properties).toMatchObject({
      BucketEncryption: { ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] },
      PublicAccessBlockConfiguration: { BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: true },
      LifecycleConfiguration: { Rules: [expect.objectContaining({ ExpirationInDays: 365, Status: 'Enabled' })] },
      LoggingConfiguration: { LogFilePrefix: 'recordings/' },
    });
    const policy = Object.values(resources).find((candidate) => candidate.Type === 'AWS::S3::BucketPolicy' && JSON.stringify(candidate.Properties.Bucket) === JSON.stringify({ Ref: bucketId() }));
    expect(statementsOf(policy?.Properties.PolicyDocument)).toContainEqual(expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }));
  });

  it('lets the callback function only put recordings and the API function only get them; no other function touches them', () => {
    const bucket = bucketId();
    const s3Actions = (name: string) =>
      statementsOfUnit(name)
        .filter((statement) => JSON.stringify(statement.Resource).includes(bucket))
        .flatMap((statement) => asArray(statement.Action));
    for (const name of allFunctionNames) {
      const expected = name === 'carrier-callbacks' ? ['s3:PutObject'] : name === 'phone-numbers' ? ['s3:GetObject'] : [];
      expect(s3Actions(name), name).toEqual(expected);
    }
  });

  it('makes the WhatsApp inbound queue FIFO with a FIFO dead-letter queue, fed to its function in FIFO order with partial failures', () => {
    const queues = Object.entries(template.findResources('AWS::SQS::Queue')) as [string, { Properties: Record<string, any> }][];
    const [inboundId, inbound] = queues.find(([id]) => id.includes('whatsappinbound') && !id.includes('DeadLetters'))!;
    expect(inbound.Properties).toMatchObject({ FifoQueue: true, VisibilityTimeout: whatsappInboundQueue.visibilityTimeoutSeconds });
    const deadLetterId = inbound.Properties.RedrivePolicy.deadLetterTargetArn['Fn::GetAtt'][0];
    expect(resource(deadLetterId, 'AWS::SQS::Queue').Properties).toMatchObject({ FifoQueue: true });
    expect(inbound.Properties.RedrivePolicy.maxReceiveCount).toBe(whatsappInboundQueue.maxReceiveCount);
    const mappings = Object.values(template.findResources('AWS::Lambda::EventSourceMapping')) as { Properties: Record<string, any> }[];
    const mapping = mappings.find((candidate) => JSON.stringify(candidate.Properties.EventSourceArn).includes(`"${inboundId}"`));
    expect(mapping?.Properties).toMatchObject({ FunctionResponseTypes: ['ReportBatchItemFailures'] });
    const webhookVariables = (resource(functionIdOf(whatsappWebhookRoutes), 'AWS::Lambda::Function').Properties.Environment as { Variables: Record<string, unknown> }).Variables;
    expect(webhookVariables).toMatchObject({ WHATSAPP_INBOUND_QUEUE_URL: { Ref: inboundId } });
    const numbersVariables = (resource(functionIdOf(whatsappNumberRoutes), 'AWS::Lambda::Function').Properties.Environment as { Variables: Record<string, unknown> }).Variables;
    expect(numbersVariables.PUBLIC_BASE_URL).toBeDefined();
  });

  it("keeps WhatsApp customers' media in an encrypted, private, TLS-only, retained bucket: the inbound function only puts them, the conversations function only reads them", () => {
    const mediaBucket = Object.keys(template.findResources('AWS::S3::Bucket')).find((id) => id.startsWith('WhatsappMedia')) as string;
    const bucket = resource(mediaBucket, 'AWS::S3::Bucket');
    expect(bucket.DeletionPolicy).toBe('Retain');
    expect(bucket.Properties).toMatchObject({
      BucketEncryption: { ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] },
      PublicAccessBlockConfiguration: { BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: true },
      LifecycleConfiguration: { Rules: [expect.objectContaining({ ExpirationInDays: 365, Status: 'Enabled' })] },
      LoggingConfiguration: { LogFilePrefix: 'whatsapp-media/' },
    });
    const policy = Object.values(resources).find((candidate) => candidate.Type === 'AWS::S3::BucketPolicy' && JSON.stringify(candidate.Properties.Bucket) === JSON.stringify({ Ref: mediaBucket }));
    expect(statementsOf(policy?.Properties.PolicyDocument)).toContainEqual(expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }));
    const s3Actions = (name: string) =>
      statementsOfUnit(name)
        .filter((statement) => JSON.stringify(statement.Resource).includes(mediaBucket))
        .flatMap((statement) => asArray(statement.Action))
        .sort();
    for (const name of allFunctionNames) {
      const expected = name === 'whatsapp-inbound' ? ['s3:PutObject'] : name === whatsappConversationRoutes.name ? ['s3:GetObject', 's3:ListBucket'] : [];
      expect(s3Actions(name), name).toEqual(expected);
      const variables = (resource(functionIdOf({ name }), 'AWS::Lambda::Function').Properties.Environment as { Variables: Record<string, unknown> }).Variables;
      expect(variables.WHATSAPP_MEDIA_BUCKET, name).toEqual(expected.length ? { Ref: mediaBucket } : undefined);
    }
  });

  it("gives EventBridge Scheduler a role that may only send to the call-backstop queue, and lets only the call-starting functions create call-* schedules with it", () => {
    const roles = Object.entries(resources).filter(
      ([id, candidate]) =>
        candidate.Type === 'AWS::IAM::Role' && id.startsWith('CallBackstopScheduler') && JSON.stringify(candidate.Properties.AssumeRolePolicyDocument).includes('scheduler.amazonaws.com'),
    );
    expect(roles).toHaveLength(1);
    const [roleId, role] = roles[0] as [string, Resource];
    expect(JSON.stringify(role.Properties.AssumeRolePolicyDocument)).toContain('aws:SourceAccount');
    const rolePolicies = Object.values(resources).filter(
      (policy) => policy.Type === 'AWS::IAM::Policy' && JSON.stringify(policy.Properties.Roles) === JSON.stringify([{ Ref: roleId }]),
    );
    const statements = rolePolicies.flatMap((policy) => statementsOf(policy.Properties.PolicyDocument));
    expect(statements.flatMap((statement) => asArray(statement.Action)).sort()).toEqual(['sqs:GetQueueAttributes', 'sqs:GetQueueUrl', 'sqs:SendMessage']);
    const queueId = Object.entries(resources).find(
      ([id, candidate]) => candidate.Type === 'AWS::SQS::Queue' && id.startsWith('Queuecallbackstop') && candidate.Properties.RedrivePolicy !== undefined,
    )?.[0];
    for (const statement of statements) expect(statement.Resource).toEqual({ 'Fn::GetAtt': [queueId, 'Arn'] });

    for (const name of allFunctionNames) {
      const creates = statementsOfUnit(name).filter((statement) => asArray(statement.Action).includes('scheduler:CreateSchedule'));
      const passes = statementsOfUnit(name).filter((statement) => asArray(statement.Action).includes('iam:PassRole'));
      if (['phone-numbers', 'carrier-callbacks', 'campaign-dispatcher'].includes(name)) {
        expect(JSON.stringify(creates[0]?.Resource), name).toContain(':schedule/default/call-*');
        expect(passes[0]?.Resource, name).toEqual({ 'Fn::GetAtt': [roleId, 'Arn'] });
        expect((passes[0] as unknown as { Condition: unknown }).Condition).toEqual({ StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } });
      } else {
        expect(creates, name).toEqual([]);
        expect(passes, name).toEqual([]);
      }
    }
  });
});

describe('the developer pages on AWS', () => {
  it('are served by the edge function, behind the same address as the API', () => {
    for (const routeKey of ['GET /openapi.json', 'GET /docs', 'GET /docs/changelog', 'GET /playground', 'GET /assets/{name}']) {
      expect(functionBehind(routeKey), routeKey).toBe(functionIdOf(edgeRoutes));
    }
  });

  it('deploy the built assets beside the edge bundle, where the handler reads them', () => {
    const code = resource(functionIdOf(edgeRoutes), 'AWS::Lambda::Function').Properties.Code as { S3Key: string };
    // The assembly keeps each bundle as `asset.<hash>`, the hash its S3 key is named after.
    const bundle = join(outdir, `asset.${code.S3Key.replace(/\.zip$/, '')}`);
    for (const name of [...assetNames, 'CHANGELOG.md']) expect(existsSync(join(bundle, 'assets', name)), name).toBe(true);
  });
});

describe('knowledge uploads and the sweeper', () => {
  const uploadsBucketId = () => Object.keys(template.findResources('AWS::S3::Bucket')).find((id) => id.startsWith('KnowledgeUploads')) as string;
  const statementsOfUnit = (name: string) => policyDocumentsOfFunction({ name }).flatMap(statementsOf);
  const allFunctionNames = [...routeGroups, ...tableStreamConsumers, ...queueConsumers, ...scheduledFunctions, voiceRelayRoutes].map((unit) => unit.name);
  const queueIdOf = (prefix: string) =>
    Object.entries(resources).find(([id, candidate]) => candidate.Type === 'AWS::SQS::Queue' && id.startsWith(prefix) && candidate.Properties.RedrivePolicy !== undefined)?.[0] as string;

  it('keeps uploads in a private, encrypted, TLS-only bucket that reports new objects to EventBridge and expires leftovers after a day', () => {
    const bucket = resource(uploadsBucketId(), 'AWS::S3::Bucket');
    expect(bucket.Properties).toMatchObject({
      BucketEncryption: { ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] },
      PublicAccessBlockConfiguration: { BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: true },
      NotificationConfiguration: { EventBridgeConfiguration: { EventBridgeEnabled: true } },
      LifecycleConfiguration: { Rules: [expect.objectContaining({ Prefix: 'uploads/', ExpirationInDays: 1, Status: 'Enabled' })] },
      CorsConfiguration: { CorsRules: [expect.objectContaining({ AllowedMethods: ['POST'] })] },
      LoggingConfiguration: { LogFilePrefix: 'knowledge-uploads/' },
    });
    // No custom resource wires the notifications (CDK's eventBridgeEnabled would add one).
    expect(Object.values(resources).filter((candidate) => candidate.Type === 'Custom::S3BucketNotifications')).toEqual([]);
  });

  it('lets the knowledge API only put uploads and the ingestion only get and delete them; no other function touches the bucket', () => {
    const bucket = uploadsBucketId();
    for (const name of allFunctionNames) {
      const statements = statementsOfUnit(name).filter((statement) => JSON.stringify(statement.Resource).includes(bucket));
      const expected = name === 'knowledge' ? ['s3:PutObject'] : name === 'knowledge-ingestion' ? ['s3:DeleteObject', 's3:GetObject'] : [];
      expect(statements.flatMap((statement) => asArray(statement.Action)).sort(), name).toEqual(expected);
      for (const statement of statements) expect(JSON.stringify(statement.Resource), name).toContain('/uploads/*');
    }
  });

  it("routes the bucket's Object Created events (uploads/ prefix) on the default bus to the uploads queue, then through the router to the FIFO ingestion queue", () => {
    const rules = Object.values(resources).filter((candidate) => candidate.Type === 'AWS::Events::Rule' && JSON.stringify(candidate.Properties.EventPattern ?? {}).includes('aws.s3'));
    expect(rules).toHaveLength(1);
    const rule = rules[0]!.Properties as Record<string, any>;
    expect(rule.EventBusName).toBeUndefined();
    expect(rule.EventPattern).toEqual({
      source: ['aws.s3'],
      'detail-type': ['Object Created'],
      detail: { bucket: { name: [{ Ref: uploadsBucketId() }] }, object: { key: [{ prefix: 'uploads/' }] } },
    });
    expect(rule.Targets).toEqual([expect.objectContaining({ Arn: { 'Fn::GetAtt': [queueIdOf('Queueknowledgeuploads'), 'Arn'] } })]);

    const ingestion = resource(queueIdOf('Queueknowledgeingestion'), 'AWS::SQS::Queue');
    expect(ingestion.Properties).toMatchObject({ FifoQueue: true, VisibilityTimeout: 130 });
    const deadLetters = (ingestion.Properties.RedrivePolicy as { deadLetterTargetArn: { 'Fn::GetAtt': [string, string] } }).deadLetterTargetArn['Fn::GetAtt'][0];
    expect(resource(deadLetters, 'AWS::SQS::Queue').Properties).toMatchObject({ FifoQueue: true });
    // The router only moves messages: it sends to the ingestion queue and never touches the table.
    expect(statementsOfUnit('knowledge-upload-router').flatMap((statement) => asArray(statement.Action)).filter((action) => action.startsWith('dynamodb:'))).toEqual([]);
    const sends = statementsOfUnit('knowledge-upload-router').filter((statement) => asArray(statement.Action).includes('sqs:SendMessage'));
    expect(sends.map((statement) => statement.Resource)).toEqual([{ 'Fn::GetAtt': [queueIdOf('Queueknowledgeingestion'), 'Arn'] }]);
  });

  it('runs the knowledge sweeper every 5 minutes from a scheduled rule', () => {
    const sweeperId = stack.getLogicalId(stack.functions.get('knowledge-sweeper')?.node.defaultChild as CfnElement);
    const schedules = Object.values(resources).filter((candidate) => candidate.Type === 'AWS::Events::Rule' && candidate.Properties.ScheduleExpression !== undefined);
    expect(schedules.map((rule) => rule.Properties)).toEqual([
      expect.objectContaining({ ScheduleExpression: 'rate(5 minutes)', Targets: [expect.objectContaining({ Arn: { 'Fn::GetAtt': [sweeperId, 'Arn'] } })] }),
    ]);
    expect(statementsOfUnit('knowledge-sweeper').flatMap((statement) => asArray(statement.Action))).toEqual(expect.arrayContaining(['dynamodb:Query', 'dynamodb:UpdateItem']));
  });
});

describe('campaigns', () => {
  it("tick the dispatcher every minute through its queue, with a role that may only send there", () => {
    const schedules = Object.values(template.findResources('AWS::Scheduler::Schedule')) as Resource[];
    expect(schedules).toHaveLength(1);
    const tick = schedules[0] as Resource;
    expect(tick.Properties).toMatchObject({ ScheduleExpression: 'rate(1 minute)', FlexibleTimeWindow: { Mode: 'OFF' } });
    const target = tick.Properties.Target as { Arn: unknown; RoleArn: { 'Fn::GetAtt': [string, string] }; Input: string };
    expect(JSON.parse(target.Input)).toEqual({ kind: 'campaign.tick' });
    const queueId = Object.entries(resources).find(
      ([id, candidate]) => candidate.Type === 'AWS::SQS::Queue' && id.startsWith('Queuecampaigndispatch') && candidate.Properties.RedrivePolicy !== undefined,
    )?.[0];
    expect(target.Arn).toEqual({ 'Fn::GetAtt': [queueId, 'Arn'] });
    const roleId = target.RoleArn['Fn::GetAtt'][0];
    const statements = Object.values(resources)
      .filter((policy) => policy.Type === 'AWS::IAM::Policy' && JSON.stringify(policy.Properties.Roles) === JSON.stringify([{ Ref: roleId }]))
      .flatMap((policy) => statementsOf(policy.Properties.PolicyDocument));
    expect(statements.flatMap((statement) => asArray(statement.Action)).sort()).toEqual(['sqs:GetQueueAttributes', 'sqs:GetQueueUrl', 'sqs:SendMessage']);
    for (const statement of statements) expect(statement.Resource).toEqual({ 'Fn::GetAtt': [queueId, 'Arn'] });
  });

  it('dispatch from a queue with a dead-letter queue and its alarm, one campaign per invocation, with what placing calls needs', () => {
    const dispatcher = resource(functionIdOf({ name: 'campaign-dispatcher' }), 'AWS::Lambda::Function');
    const variables = (dispatcher.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
    for (const name of ['CAMPAIGN_QUEUE_URL', 'PUBLIC_BASE_URL', 'VOICE_RELAY_URL', 'CALL_BACKSTOP_QUEUE_ARN', 'SCHEDULER_ROLE_ARN']) expect(variables[name], name).toBeDefined();
    const mappings = Object.values(template.findResources('AWS::Lambda::EventSourceMapping')) as Resource[];
    const mapping = mappings.find((candidate) => JSON.stringify(candidate.Properties.FunctionName).includes(functionIdOf({ name: 'campaign-dispatcher' })));
    expect(mapping?.Properties).toMatchObject({ BatchSize: 1, FunctionResponseTypes: ['ReportBatchItemFailures'] });
    const queue = Object.entries(resources).find(([id, candidate]) => candidate.Type === 'AWS::SQS::Queue' && id.startsWith('Queuecampaigndispatch') && candidate.Properties.RedrivePolicy !== undefined);
    const deadLetterId = ((queue?.[1].Properties.RedrivePolicy as { deadLetterTargetArn: { 'Fn::GetAtt': [string] } }).deadLetterTargetArn['Fn::GetAtt'][0]);
    // Its alarm is in the operations stack, which watches every dead-letter queue it is handed (test/infra/operations.test.ts).
    const operations = Object.values(resources).find((candidate) => candidate.Type === 'AWS::CloudFormation::Stack');
    expect(JSON.stringify(operations?.Properties.Parameters)).toContain(`"${deadLetterId}","QueueName"`);
  });
});
