import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CfnOutput, Duration, Fn, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import * as apigateway from 'aws-cdk-lib/aws-apigateway';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import * as cloudfront from 'aws-cdk-lib/aws-cloudfront';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as origins from 'aws-cdk-lib/aws-cloudfront-origins';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as eventTargets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, type OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { DynamoEventSource, SqsDlq, SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { eventRules, queueConsumers, tableStreamConsumers, type TableStreamConsumer } from '../functions/consumers.ts';
import { routeGroups } from '../functions/route-groups.ts';
import { routeKeyOf, type HttpMethod, type RouteDefinition } from '../shared/http/route.ts';
import type { QueueDefinition } from '../shared/queue/queue-definition.ts';
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
/** Groups that run turns invoke models; Converse/ConverseStream are authorized by these two actions. */
const bedrockInvokeActions = ['bedrock:InvokeModel', 'bedrock:InvokeModelWithResponseStream'];

/** API Gateway HTTP API gives up on an integration after 30 s; its functions finish before it does. */
const httpApiFunctionTimeout = Duration.seconds(29);
/** The longest a REST API streaming integration may run; also Lambda's own maximum. */
const streamingTimeout = Duration.minutes(15);
/**
 * CloudFront's wait for the first byte and between bytes from the streaming origin: the most the default quota
 * allows. A non-streamed turn sends nothing until it is done, so the turn deadline of streaming functions stays below.
 */
const streamingOriginReadTimeout = Duration.seconds(120);
const streamingTurnTimeout = Duration.seconds(110);
/** The REST API stage that serves the streaming routes (CloudFront adds it as the origin path). */
const streamingStageName = 'live';

/** The CloudFront path pattern of a route: each `{param}` segment becomes `*`. */
export function cloudFrontPathPattern(route: Pick<RouteDefinition, 'path'>): string {
  return route.path
    .split('/')
    .map((segment) => (/^\{[^}]+\}$/.test(segment) ? '*' : segment))
    .join('/');
}

/** Whether a CloudFront path pattern matches a path (`*` matches any run of characters, `/` included; `?` one). */
export function matchesPathPattern(pattern: string, path: string): boolean {
  const source = pattern.replace(/[.+^$()|[\]\\{}]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  return new RegExp(`^${source}$`).test(path);
}

const string = (name: string): dynamodb.Attribute => ({ name, type: dynamodb.AttributeType.STRING });

export class AgentPlatformStack extends Stack {
  /** The function of each route group and stream consumer, by name. */
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

    // Whatever lands in a dead-letter queue needs a person: each raises an alarm on this topic (subscribe to it).
    const alarms = new sns.Topic(this, 'OperationsAlarms', { displayName: 'agent-platform operations alarms' });
    const deadLetterQueue = (scope: Construct, id: string, what: string): sqs.Queue => {
      const queue = new sqs.Queue(scope, id, { retentionPeriod: Duration.days(14), enforceSSL: true });
      const alarm = new cloudwatch.Alarm(scope, `${id}Alarm`, {
        alarmDescription: `${what} landed in a dead-letter queue`,
        metric: queue.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(5), statistic: cloudwatch.Stats.MAXIMUM }),
        threshold: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
      alarm.addAlarmAction(new cloudwatchActions.SnsAction(alarms));
      return queue;
    };

    // The platform's queues, each with a dead-letter queue for messages that keep failing their consumer.
    const queues = new Map<string, sqs.Queue>();
    const queueFor = (definition: QueueDefinition): sqs.Queue => {
      let queue = queues.get(definition.name);
      if (!queue) {
        const queueScope = new Construct(this, `Queue-${definition.name}`);
        const deadLetters = deadLetterQueue(queueScope, 'DeadLetters', `A message of ${definition.name} that kept failing its consumer`);
        queue = new sqs.Queue(queueScope, 'Queue', {
          visibilityTimeout: Duration.seconds(definition.visibilityTimeoutSeconds),
          retentionPeriod: Duration.days(4),
          enforceSSL: true,
          deadLetterQueue: { queue: deadLetters, maxReceiveCount: definition.maxReceiveCount },
        });
        queues.set(definition.name, queue);
      }
      return queue;
    };
    const queueUrlEnvironment = (urls: Record<string, QueueDefinition> = {}): Record<string, string> =>
      Object.fromEntries(Object.entries(urls).map(([variable, definition]) => [variable, queueFor(definition).queueUrl]));

    const httpApi = new apigwv2.HttpApi(this, 'HttpApi', { apiName: 'agent-platform' });
    const routes: apigwv2.HttpRoute[] = [];
    const httpApiGroups = routeGroups.filter((group) => !group.streaming);
    const streamingGroups = routeGroups.filter((group) => group.streaming);

    // HTTP API cannot stream a Lambda response, so streaming groups are served by a REST API with response
    // streaming instead, and CloudFront puts both behind one base address (docs/streaming.md).
    const streamingApi = new apigateway.RestApi(this, 'StreamingApi', {
      restApiName: 'agent-platform-streaming',
      description: 'The streaming routes of the agent platform (Lambda response streaming); reached through CloudFront',
      endpointConfiguration: { types: [apigateway.EndpointType.REGIONAL] },
      // The account-wide CloudWatch role is not this stack's to own.
      cloudWatchRole: false,
      deployOptions: {
        stageName: streamingStageName,
        throttlingRateLimit: stageThrottle.rateLimit,
        throttlingBurstLimit: stageThrottle.burstLimit,
        methodOptions: Object.fromEntries(
          streamingGroups.flatMap((group) =>
            Object.values(group.routes).map((route) => [
              `${route.path}/${route.method}`,
              { throttlingRateLimit: routeThrottle[route.method].rateLimit, throttlingBurstLimit: routeThrottle[route.method].burstLimit },
            ]),
          ),
        ),
      },
    });
    // StreamingApiUrl below replaces the REST API's automatic `Endpoint` output.
    streamingApi.node.tryRemoveChild('Endpoint');

    const grantModelInvocation = (fn: lambda.Function) =>
      fn.addToRolePolicy(
        new iam.PolicyStatement({
          actions: bedrockInvokeActions,
          resources: [
            `arn:${this.partition}:bedrock:*::foundation-model/*`,
            `arn:${this.partition}:bedrock:*:${this.account}:inference-profile/*`,
            `arn:${this.partition}:bedrock:*:${this.account}:application-inference-profile/*`,
          ],
        }),
      );

    // Secrets at rest (docs/security.md#secrets-at-rest): the functions that create or rotate secrets may only make
    // data keys, the ones that sign with them may only unwrap them; the others cannot touch the key at all.
    const secretsKey = new kms.Key(this, 'SecretsKey', {
      description: 'agent-platform: seals webhook and function-tool signing secrets kept in the table (envelope encryption)',
      alias: `${this.stackName}/secrets`,
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    const grantSecretsKey = (fn: lambda.Function, access: { seals?: boolean | undefined; opens?: boolean | undefined }) => {
      if (access.seals) secretsKey.grant(fn, 'kms:GenerateDataKey');
      if (access.opens) secretsKey.grantDecrypt(fn);
      if (access.seals || access.opens) fn.addEnvironment('SECRETS_KMS_KEY_ID', secretsKey.keyArn);
    };

    for (const group of routeGroups) {
      const groupScope = new Construct(this, group.name);
      const fn = bundledFunction(groupScope, group.entry, {
        timeout: group.streaming ? streamingTimeout : httpApiFunctionTimeout,
        environment: {
          TABLE_NAME: table.tableName,
          ...(group.runsTurns ? { TURN_TIMEOUT_SECONDS: String(streamingTurnTimeout.toSeconds()) } : {}),
          ...queueUrlEnvironment(group.queueUrls),
        },
      });
      for (const definition of Object.values(group.queueUrls ?? {})) queueFor(definition).grantSendMessages(fn);
      fn.addToRolePolicy(
        new iam.PolicyStatement({
          actions: group.catchAll ? readOnlyActions : readWriteActions,
          resources: [table.tableArn, `${table.tableArn}/index/*`],
        }),
      );
      if (group.runsTurns) grantModelInvocation(fn);
      grantSecretsKey(fn, { seals: group.sealsSecrets, opens: group.runsTurns });
      this.functions.set(group.name, fn);

      if (group.streaming) {
        const integration = new apigateway.LambdaIntegration(fn, {
          responseTransferMode: apigateway.ResponseTransferMode.STREAM,
          timeout: streamingTimeout,
          // Only the deployed stage may invoke the function; no permission for the console's test invoke.
          allowTestInvoke: false,
        });
        for (const route of Object.values(group.routes)) {
          const resource = resourceFor(streamingApi.root, route.path);
          // No API Gateway authorizer: the function authenticates like every other handler.
          resource.addMethod(route.method, integration, { authorizationType: apigateway.AuthorizationType.NONE });
          // Other methods reach the function too, which answers them in the error envelope (as HTTP API's $default does).
          if (!resource.node.tryFindChild('ANY')) {
            resource.addMethod('ANY', integration, { authorizationType: apigateway.AuthorizationType.NONE });
          }
        }
        continue;
      }

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

    // Domain events, relayed from the table's stream; customers route them with EventBridge rules of their own.
    const eventBus = new events.EventBus(this, 'Events');
    // Stream consumers see only the records their filter selects; failed batches are bisected, retried, then parked.
    const streamFailures = deadLetterQueue(this, 'StreamFailures', 'A table stream batch a consumer kept failing');
    for (const consumer of tableStreamConsumers) {
      const consumerScope = new Construct(this, consumer.name);
      const fn = bundledFunction(consumerScope, consumer.entry, {
        timeout: Duration.seconds(60),
        environment: {
          TABLE_NAME: table.tableName,
          ...(consumer.publishesEvents ? { EVENT_BUS_NAME: eventBus.eventBusName } : {}),
          ...queueUrlEnvironment(consumer.queueUrls),
        },
      });
      for (const definition of Object.values(consumer.queueUrls ?? {})) queueFor(definition).grantSendMessages(fn);
      if (consumer.publishesEvents) eventBus.grantPutEventsTo(fn);
      // The relay reads only the stream records it is handed; the others work on the table.
      else fn.addToRolePolicy(new iam.PolicyStatement({ actions: readWriteActions, resources: [table.tableArn, `${table.tableArn}/index/*`] }));
      fn.addEventSource(
        new DynamoEventSource(table, {
          startingPosition: lambda.StartingPosition.TRIM_HORIZON,
          batchSize: 100,
          bisectBatchOnError: true,
          reportBatchItemFailures: true,
          retryAttempts: 10,
          onFailure: new SqsDlq(streamFailures),
          filters: [lambda.FilterCriteria.filter(streamFilter(consumer))],
        }),
      );
      this.functions.set(consumer.name, fn);
    }

    // Each rule sends the events it matches to a queue; EventBridge retries a failed send for 24 hours.
    const ruleFailures = deadLetterQueue(this, 'EventRuleFailures', 'An event EventBridge could not send to its target for 24 hours');
    for (const rule of eventRules) {
      new events.Rule(this, `Rule-${rule.name}`, {
        eventBus,
        description: rule.description,
        eventPattern: { source: rule.pattern.source, ...(rule.pattern['detail-type'] ? { detailType: rule.pattern['detail-type'] } : {}) },
        targets: [new eventTargets.SqsQueue(queueFor(rule.target), { deadLetterQueue: ruleFailures, maxEventAge: Duration.hours(24), retryAttempts: 185 })],
      });
    }
    // Queue consumers report partial batch failures, so one failing message does not send its whole batch back.
    for (const consumer of queueConsumers) {
      const queue = queueFor(consumer.queue);
      const fn = bundledFunction(new Construct(this, consumer.name), consumer.entry, {
        timeout: Duration.seconds(consumer.timeoutSeconds),
        environment: { TABLE_NAME: table.tableName, ...(consumer.queueUrlVariable ? { [consumer.queueUrlVariable]: queue.queueUrl } : {}) },
      });
      fn.addToRolePolicy(new iam.PolicyStatement({ actions: readWriteActions, resources: [table.tableArn, `${table.tableArn}/index/*`] }));
      if (consumer.queueUrlVariable) queue.grantSendMessages(fn);
      if (consumer.invokesModels) grantModelInvocation(fn);
      grantSecretsKey(fn, { opens: consumer.opensSecrets });
      fn.addEventSource(new SqsEventSource(queue, { batchSize: consumer.batchSize, reportBatchItemFailures: true }));
      this.functions.set(consumer.name, fn);
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
      httpApiGroups.flatMap((group) =>
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

    // One public base address: the HTTP API by default, the streaming routes to the REST API. Nothing is cached.
    const noCache = {
      allowedMethods: cloudfront.AllowedMethods.ALLOW_ALL,
      cachePolicy: cloudfront.CachePolicy.CACHING_DISABLED,
      // Every viewer header (Authorization and x-api-key included, which CloudFront forwards when caching is off)
      // and the query string; Host is the origin's, as API Gateway requires.
      originRequestPolicy: cloudfront.OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
      viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.HTTPS_ONLY,
      // Compression would buffer the event stream; API responses are small anyway.
      compress: false,
    } satisfies Partial<cloudfront.BehaviorOptions>;
    const streamingOrigin = new origins.RestApiOrigin(streamingApi, { readTimeout: streamingOriginReadTimeout });
    const streamingPatterns = [
      ...new Set(streamingGroups.flatMap((group) => Object.values(group.routes).map((route) => cloudFrontPathPattern(route)))),
    ];
    // A pattern that also caught an HTTP API route would send it to the REST API, where it does not exist.
    for (const group of httpApiGroups) {
      for (const route of Object.values(group.routes)) {
        const example = route.path.replace(/\{[^}]+\}/g, 'x');
        const pattern = streamingPatterns.find((candidate) => matchesPathPattern(candidate, example));
        if (pattern) throw new Error(`${routeKeyOf(route)} (group ${group.name}) would be routed to the streaming API by ${pattern}`);
      }
    }
    const distribution = new cloudfront.Distribution(this, 'Distribution', {
      comment: 'agent-platform: one base address for the HTTP API and the streaming REST API',
      defaultBehavior: {
        origin: new origins.HttpOrigin(Fn.select(2, Fn.split('/', httpApi.apiEndpoint)), {
          protocolPolicy: cloudfront.OriginProtocolPolicy.HTTPS_ONLY,
        }),
        ...noCache,
      },
      additionalBehaviors: Object.fromEntries(streamingPatterns.map((pattern) => [pattern, { origin: streamingOrigin, ...noCache }])),
    });

    new CfnOutput(this, 'ApiBaseUrl', { value: `https://${distribution.distributionDomainName}`, description: 'The public base address' });
    new CfnOutput(this, 'ApiUrl', { value: httpApi.apiEndpoint, description: 'The HTTP API directly (non-streaming routes; debugging)' });
    new CfnOutput(this, 'StreamingApiUrl', { value: streamingApi.url, description: 'The streaming REST API stage directly (debugging)' });
    new CfnOutput(this, 'TableName', { value: table.tableName });
    new CfnOutput(this, 'AlarmTopicArn', { value: alarms.topicArn, description: 'Subscribe to be told when anything lands in a dead-letter queue' });
    new CfnOutput(this, 'EventBusName', { value: eventBus.eventBusName, description: 'Domain events (source agent-platform) for your own EventBridge rules' });
  }
}

/** The REST API resource of a route path, created segment by segment (`{id}` becomes a path-parameter resource). */
function resourceFor(root: apigateway.IResource, routePath: string): apigateway.IResource {
  return routePath
    .split('/')
    .filter(Boolean)
    .reduce((parent, segment) => parent.getResource(segment) ?? parent.addResource(segment), root);
}

/** The event-source-mapping filter that selects a consumer's records. */
function streamFilter(consumer: TableStreamConsumer): Record<string, unknown> {
  const entities = lambda.FilterRule.or(...consumer.select.entities);
  if (consumer.select.records === 'inserts') return { eventName: lambda.FilterRule.isEqual('INSERT'), dynamodb: { NewImage: { entity: { S: entities } } } };
  return {
    eventName: lambda.FilterRule.isEqual('REMOVE'),
    // TTL deletions are made by the DynamoDB service itself.
    userIdentity: { type: lambda.FilterRule.isEqual('Service'), principalId: lambda.FilterRule.isEqual('dynamodb.amazonaws.com') },
    dynamodb: { OldImage: { entity: { S: entities } } },
  };
}

/** A Lambda function bundled from a handler module with the esbuild options shared with `npm run bench`. */
function bundledFunction(
  scope: Construct,
  entry: string,
  options: { timeout: Duration; environment: Record<string, string> },
): NodejsFunction {
  return new NodejsFunction(scope, 'Function', {
    entry: path.join(repoRoot, entry),
    handler: 'handler',
    depsLockFilePath: path.join(repoRoot, 'package-lock.json'),
    runtime: lambda.Runtime.NODEJS_22_X,
    architecture: lambda.Architecture.ARM_64,
    memorySize: 1024,
    timeout: options.timeout,
    // An explicit log group avoids CDK's log-retention custom resource.
    logGroup: new logs.LogGroup(scope, 'Logs', { retention: logs.RetentionDays.ONE_MONTH }),
    environment: { NODE_OPTIONS: '--enable-source-maps', POWERTOOLS_SERVICE_NAME: 'agent-platform', ...options.environment },
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
}
