import { readFileSync } from 'node:fs';
import { App, type CfnElement } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { routeGroups } from '../../functions/route-groups.ts';
import { AgentPlatformStack } from '../../infra/stack.ts';
import type { RouteGroup } from '../../shared/http/route.ts';
import { tableDefinition } from '../../shared/store/table.ts';

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
const allRoutes = routeGroups.flatMap((group) => Object.values(group.routes).map((route) => ({ group, route })));

let stack: AgentPlatformStack;
let template: Template;
let resources: Record<string, Resource>;

beforeAll(() => {
  // The same feature flags as `cdk synth`, so the template under test is the one that deploys.
  const { context } = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')) as { context: Record<string, unknown> };
  stack = new AgentPlatformStack(new App({ context }), 'Test');
  template = Template.fromStack(stack);
  resources = template.toJSON().Resources as Record<string, Resource>;
}, 120_000);

function resource(logicalId: string, type: string): Resource {
  const found = resources[logicalId];
  expect(found?.Type, logicalId).toBe(type);
  return found as Resource;
}

function functionIdOf(group: RouteGroup): string {
  const fn = stack.functions.get(group.name);
  expect(fn, group.name).toBeDefined();
  return stack.getLogicalId(fn?.node.defaultChild as CfnElement);
}

/** Follows a route's target to its integration and returns the logical id of the function it invokes. */
function functionBehind(routeKey: string): string {
  const routes = Object.values(resources).filter(
    (candidate) => candidate.Type === 'AWS::ApiGatewayV2::Route' && candidate.Properties.RouteKey === routeKey,
  );
  expect(routes, routeKey).toHaveLength(1);
  const target = routes[0]?.Properties.Target as { 'Fn::Join': [string, [string, { Ref: string }]] };
  expect(target).toEqual({ 'Fn::Join': ['', ['integrations/', { Ref: expect.any(String) }]] });
  const integration = resource(target['Fn::Join'][1][1].Ref, 'AWS::ApiGatewayV2::Integration');
  expect(integration.Properties).toMatchObject({ IntegrationType: 'AWS_PROXY', PayloadFormatVersion: '2.0' });
  const uri = integration.Properties.IntegrationUri as { 'Fn::GetAtt': [string, string] };
  expect(uri['Fn::GetAtt'][1]).toBe('Arn');
  return uri['Fn::GetAtt'][0];
}

function statementsOf(document: unknown): Statement[] {
  return asArray((document as { Statement?: Statement | Statement[] } | undefined)?.Statement);
}

describe('AgentPlatformStack', () => {
  describe('routes', () => {
    it.each(allRoutes.map(({ group, route }) => [`${route.method} ${route.path}`, group] as const))(
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
      template.resourceCountIs('AWS::ApiGatewayV2::Route', allRoutes.length + 1);
    });

    it('throttles every route on the default stage, writes harder than reads', () => {
      const stages = Object.values(template.findResources('AWS::ApiGatewayV2::Stage')) as Resource[];
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

      const expectedKeys = allRoutes.map(({ route }) => `${route.method} ${route.path}`).sort();
      expect(Object.keys(stage.RouteSettings).sort()).toEqual(expectedKeys);
      const limits = allRoutes.map(({ route }) => ({
        write: writeMethods.has(route.method),
        ...stage.RouteSettings[`${route.method} ${route.path}`],
      }));
      const maxWrite = Math.max(...limits.filter((limit) => limit.write).map((limit) => limit.ThrottlingRateLimit ?? NaN));
      const minRead = Math.min(...limits.filter((limit) => !limit.write).map((limit) => limit.ThrottlingRateLimit ?? NaN));
      expect(maxWrite).toBeLessThan(minRead);
      for (const limit of limits) expect(limit.ThrottlingBurstLimit).toBeGreaterThanOrEqual(limit.ThrottlingRateLimit ?? Infinity);
    });
  });

  describe('functions', () => {
    it('has exactly one function per route group and no helper functions', () => {
      template.resourceCountIs('AWS::Lambda::Function', routeGroups.length);
      expect(new Set(routeGroups.map(functionIdOf)).size).toBe(routeGroups.length);
    });

    it('runs every function on Node.js 22 on arm64, with a month of logs', () => {
      template.allResourcesProperties('AWS::Lambda::Function', {
        Runtime: 'nodejs22.x',
        Architectures: ['arm64'],
        MemorySize: 1024,
        Timeout: 29,
      });
      for (const group of routeGroups) {
        const fn = resource(functionIdOf(group), 'AWS::Lambda::Function');
        const logGroup = (fn.Properties.LoggingConfig as { LogGroup: { Ref: string } }).LogGroup.Ref;
        expect(resource(logGroup, 'AWS::Logs::LogGroup').Properties.RetentionInDays).toBe(30);
      }
    });

    it.each(routeGroups.map((group) => [group.name, group] as const))(
      '%s may use only the DynamoDB actions it needs',
      (_name, group) => {
        const fn = resource(functionIdOf(group), 'AWS::Lambda::Function');
        const roleId = (fn.Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
        const documents = [
          ...asArray(resource(roleId, 'AWS::IAM::Role').Properties.Policies as { PolicyDocument: unknown }[]).map(
            (policy) => policy.PolicyDocument,
          ),
          ...Object.values(resources)
            .filter(
              (policy) =>
                policy.Type === 'AWS::IAM::Policy' &&
                asArray(policy.Properties.Roles as unknown[]).some((role) => JSON.stringify(role) === JSON.stringify({ Ref: roleId })),
            )
            .map((policy) => policy.Properties.PolicyDocument),
        ];
        const actions = documents
          .flatMap(statementsOf)
          .flatMap((statement) => asArray(statement.Action))
          .filter((action) => action.toLowerCase().startsWith('dynamodb:'));
        expect([...new Set(actions)].sort()).toEqual(group.catchAll ? readOnlyActions : readWriteActions);
      },
    );

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

  it('outputs the API URL and the table name', () => {
    expect(Object.keys(template.findOutputs('*')).sort()).toEqual(['ApiUrl', 'TableName']);
  });
});
