import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, type OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { routeGroups } from '../functions/route-groups.ts';
import { routeKeyOf, type HttpMethod } from '../shared/http/route.ts';
import { tableDefinition } from '../shared/store/table.ts';
import { lambdaBundling } from './bundling.ts';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Requests per second (steady / burst). Writes are stricter than reads; unmatched requests get the stage default. */
const stageThrottle = { rateLimit: 100, burstLimit: 200 };
const routeThrottle: Record<HttpMethod, { rateLimit: number; burstLimit: number }> = {
  GET: { rateLimit: 50, burstLimit: 100 },
  POST: { rateLimit: 10, burstLimit: 20 },
  PUT: { rateLimit: 10, burstLimit: 20 },
  PATCH: { rateLimit: 10, burstLimit: 20 },
  DELETE: { rateLimit: 10, burstLimit: 20 },
};

/** Item-level actions only; TransactWriteItems is authorized per contained action. */
const readWriteActions = [
  'dynamodb:GetItem',
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:DeleteItem',
  'dynamodb:Query',
  'dynamodb:ConditionCheckItem',
  'dynamodb:BatchGetItem',
  'dynamodb:BatchWriteItem',
];
/** The edge group only serves health and the catch-all; it never writes. */
const readOnlyActions = ['dynamodb:GetItem', 'dynamodb:Query'];

const string = (name: string): dynamodb.Attribute => ({ name, type: dynamodb.AttributeType.STRING });

export class AgentPlatformStack extends Stack {
  /** The function of each route group, by group name. */
  readonly functions = new Map<string, NodejsFunction>();

  constructor(scope: Construct, id: string, props?: StackProps) {
    super(scope, id, props);

    const table = new dynamodb.TableV2(this, 'Table', {
      partitionKey: string(tableDefinition.partitionKey),
      sortKey: string(tableDefinition.sortKey),
      globalSecondaryIndexes: tableDefinition.globalSecondaryIndexes.map((index) => ({
        indexName: index.indexName,
        partitionKey: string(index.partitionKey),
        sortKey: string(index.sortKey),
        projectionType: dynamodb.ProjectionType.ALL,
      })),
      billing: dynamodb.Billing.onDemand(),
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      timeToLiveAttribute: tableDefinition.timeToLiveAttribute,
      dynamoStream: dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
      removalPolicy: RemovalPolicy.RETAIN,
    });

    const httpApi = new apigwv2.HttpApi(this, 'HttpApi', { apiName: 'agent-platform' });
    const routes: apigwv2.HttpRoute[] = [];

    for (const group of routeGroups) {
      const groupScope = new Construct(this, group.name);
      const fn = new NodejsFunction(groupScope, 'Function', {
        entry: path.join(repoRoot, group.entry),
        handler: 'handler',
        depsLockFilePath: path.join(repoRoot, 'package-lock.json'),
        runtime: lambda.Runtime.NODEJS_22_X,
        architecture: lambda.Architecture.ARM_64,
        memorySize: 1024,
        // API Gateway gives up on an integration after 30 s; finish before it does.
        timeout: Duration.seconds(29),
        // An explicit log group avoids CDK's log-retention custom resource.
        logGroup: new logs.LogGroup(groupScope, 'Logs', { retention: logs.RetentionDays.ONE_MONTH }),
        environment: {
          TABLE_NAME: table.tableName,
          NODE_OPTIONS: '--enable-source-maps',
          POWERTOOLS_SERVICE_NAME: 'agent-platform',
        },
        // The esbuild options shared with `npm run bench`, in NodejsFunction's spelling.
        bundling: {
          format: lambdaBundling.format as OutputFormat,
          minify: lambdaBundling.minify,
          // esbuild's default source map is the linked one lambdaBundling asks for.
          sourceMap: true,
          target: lambdaBundling.target,
          mainFields: lambdaBundling.mainFields,
          banner: lambdaBundling.banner.js,
          externalModules: lambdaBundling.external,
          // Bundle with the esbuild devDependency: synth must work without Docker.
          forceDockerBundling: false,
        },
      });
      fn.addToRolePolicy(
        new iam.PolicyStatement({
          actions: group.catchAll ? readOnlyActions : readWriteActions,
          resources: [table.tableArn, `${table.tableArn}/index/*`],
        }),
      );
      this.functions.set(group.name, fn);

      const integration = new HttpLambdaIntegration('Integration', fn, {
        payloadFormatVersion: apigwv2.PayloadFormatVersion.VERSION_2_0,
      });
      for (const route of Object.values(group.routes)) {
        routes.push(...httpApi.addRoutes({ path: route.path, methods: [apigwv2.HttpMethod[route.method]], integration }));
      }
      if (group.catchAll) {
        new apigwv2.HttpRoute(groupScope, 'DefaultRoute', { httpApi, routeKey: apigwv2.HttpRouteKey.DEFAULT, integration });
      }
    }

    const accessLogs = new logs.LogGroup(this, 'AccessLogs', { retention: logs.RetentionDays.ONE_MONTH });
    // The L2 HttpApi takes no options for its default stage, so set throttling and access logging on the L1.
    const stage = httpApi.defaultStage?.node.defaultChild as apigwv2.CfnStage;
    stage.defaultRouteSettings = {
      throttlingRateLimit: stageThrottle.rateLimit,
      throttlingBurstLimit: stageThrottle.burstLimit,
    };
    // `routeSettings` is raw JSON to CloudFormation, so its keys are spelled as the template wants them.
    stage.routeSettings = Object.fromEntries(
      routeGroups.flatMap((group) =>
        Object.values(group.routes).map((route) => [
          routeKeyOf(route),
          {
            ThrottlingRateLimit: routeThrottle[route.method].rateLimit,
            ThrottlingBurstLimit: routeThrottle[route.method].burstLimit,
          },
        ]),
      ),
    );
    // Route settings may only name routes that already exist.
    stage.node.addDependency(...routes.map((route) => route.node.defaultChild as apigwv2.CfnRoute));
    stage.accessLogSettings = {
      destinationArn: accessLogs.logGroupArn,
      format: JSON.stringify({
        requestId: '$context.requestId',
        ip: '$context.identity.sourceIp',
        requestTime: '$context.requestTime',
        routeKey: '$context.routeKey',
        status: '$context.status',
        protocol: '$context.protocol',
        responseLength: '$context.responseLength',
        responseLatency: '$context.responseLatency',
        integrationError: '$context.integrationErrorMessage',
      }),
    };

    new CfnOutput(this, 'ApiUrl', { value: httpApi.apiEndpoint });
    new CfnOutput(this, 'TableName', { value: table.tableName });
  }
}
