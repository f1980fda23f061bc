import { cpSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AssetHashType, CfnOutput, DockerImage, Duration, Fn, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import * as apigateway from 'aws-cdk-lib/aws-apigateway';
import * as acm from 'aws-cdk-lib/aws-certificatemanager';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration, WebSocketLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import * as cloudfront from 'aws-cdk-lib/aws-cloudfront';
import * as origins from 'aws-cdk-lib/aws-cloudfront-origins';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as eventTargets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq, SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as s3vectors from 'aws-cdk-lib/aws-s3vectors';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { NagSuppressions, type NagPackSuppression } from 'cdk-nag';
import { Construct, type IConstruct } from 'constructs';
import { callBackstopQueue, campaignQueue, eventRules, queueConsumers, scheduledFunctions, tableStreamConsumers, uploadEventRule, type TableStreamConsumer } from '../functions/consumers.ts';
import { memoryMbOf } from '../functions/lambda-functions.ts';
import { routeGroups } from '../functions/route-groups.ts';
import { settingsOf } from '../functions/settings.ts';
import { voiceRelayRoutes } from '../functions/voice-relay/routes.ts';
import { functionTimeoutSeconds, routeKeyOf, routeKeysOf, routePaths, type HttpMethod, type RouteDefinition, type RouteGroup } from '../shared/platform/http/route.ts';
import { secretArnVariable, settingSources, type SecretSettingName, type SettingName } from '../shared/platform/config.ts';
import type { QueueDefinition } from '../shared/platform/queue/queue-definition.ts';
import { tableDefinition } from '../shared/platform/store/table.ts';
import { bundleEntryFile, bundleFunctionSync } from './bundling.ts';
import { checkDeploymentConfig, inferenceProfileGeographies, type Deployment, type SecretSource } from './deployment-config.ts';
import { MediaWorkerService } from './media-worker-service.ts';
import { OperationsStack } from './operations.ts';

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
/** The edge group only serves health, the developer pages and the catch-all; it never writes. */
const readOnlyActions = ['dynamodb:GetItem', 'dynamodb:Query'];
/** Groups that run turns invoke models; Converse/ConverseStream are authorized by these two actions. */
const bedrockInvokeActions = ['bedrock:InvokeModel', 'bedrock:InvokeModelWithResponseStream'];

/** The longest a REST API streaming integration may run; also Lambda's own maximum. */
const streamingTimeout = Duration.seconds(functionTimeoutSeconds({ streaming: true }));
/**
 * CloudFront's wait for the first byte and between bytes from the streaming origin: the most the default quota
 * allows. A non-streamed turn sends nothing until it is done, so the turn deadline of streaming functions stays below.
 */
const streamingOriginReadTimeout = Duration.seconds(120);
const streamingTurnTimeout = Duration.seconds(110);
/** Call recordings are deleted a year after the call (docs/voice.md#recordings). */
const recordingRetentionDays = 365;
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

/** What a grant is given to: a function, or the media worker's task role in the same shape. */
type Grantee = iam.IGrantable & { readonly role?: iam.IRole | undefined; addToRolePolicy(statement: iam.PolicyStatement): void };

export interface AgentPlatformStackProps extends StackProps {
  /**
   * The checked deployment configuration (infra/deployment-config.ts; the defaults without one). Its custom domain
   * (with an ACM certificate in us-east-1, CloudFront's region) makes viewers use TLS 1.2 or newer; without it the
   * distribution keeps its *.cloudfront.net name, whose certificate CloudFront also serves over TLS 1.0.
   */
  deployment?: Deployment;
}

export class AgentPlatformStack extends Stack {
  /** The function of each route group and stream consumer, by name. */
  readonly functions = new Map<string, lambda.Function>();
  /** The alarms and the dashboard (a nested stack). */
  readonly operations: OperationsStack;
  /** The media worker, when the deployment enables it (infra/media-worker-service.ts). */
  readonly mediaWorker: MediaWorkerService | undefined;

  constructor(scope: Construct, id: string, props: AgentPlatformStackProps = {}) {
    super(scope, id, props);
    const deployment = props.deployment ?? checkDeploymentConfig({});
    const { domain, webAclArn } = deployment.config;
    const logRetention = deployment.config.logRetentionDays as logs.RetentionDays;
    // The value of each `stack` setting (config.ts), filled in as the resources are made; given to the functions last.
    const stackSettings: Partial<Record<SettingName, string>> = { TURN_TIMEOUT_SECONDS: String(streamingTurnTimeout.toSeconds()) };

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

    stackSettings.TABLE_NAME = table.tableName;
    // The table and each of its indexes by name: no wildcard.
    const tableResources = [table.tableArn, ...tableDefinition.globalSecondaryIndexes.map((index) => `${table.tableArn}/index/${index.indexName}`)];

    // Every alarm of the stack notifies this topic (infra/operations.ts; subscribe to it, or set alarmEmail).
    const alarms = new sns.Topic(this, 'OperationsAlarms', { displayName: 'agent-platform operations alarms', enforceSSL: true });
    // Whatever lands in a dead-letter queue needs a person: each raises an alarm (infra/operations.ts).
    const deadLetterQueues: { name: string; queue: sqs.Queue; what: string }[] = [];
    const deadLetterQueue = (scope: Construct, id: string, name: string, what: string, fifo = false): sqs.Queue => {
      // A FIFO queue's dead-letter queue must be FIFO too.
      const queue = new sqs.Queue(scope, id, { retentionPeriod: Duration.days(14), enforceSSL: true, ...(fifo ? { fifo: true } : {}) });
      deadLetterQueues.push({ name, queue, what });
      return queue;
    };

    // The platform's queues, each with a dead-letter queue for messages that keep failing their consumer.
    const queues = new Map<string, sqs.Queue>();
    const queueFor = (definition: QueueDefinition): sqs.Queue => {
      let queue = queues.get(definition.name);
      if (!queue) {
        const queueScope = new Construct(this, `Queue-${definition.name}`);
        const deadLetters = deadLetterQueue(queueScope, 'DeadLetters', definition.name, `A message of ${definition.name} that kept failing its consumer`, definition.fifo);
        queue = new sqs.Queue(queueScope, 'Queue', {
          // A FIFO queue's senders give each message its group and deduplication id (no content-based deduplication).
          ...(definition.fifo ? { fifo: true } : {}),
          visibilityTimeout: Duration.seconds(definition.visibilityTimeoutSeconds),
          retentionPeriod: Duration.days(4),
          enforceSSL: true,
          deadLetterQueue: { queue: deadLetters, maxReceiveCount: definition.maxReceiveCount },
        });
        queues.set(definition.name, queue);
      }
      return queue;
    };
    // Each queue-URL setting names one queue, whoever sends to it.
    const queueVariables: [string, QueueDefinition][] = [
      ...routeGroups.flatMap((group) => Object.entries(group.queueUrls ?? {})),
      ...tableStreamConsumers.flatMap((consumer) => Object.entries(consumer.queueUrls ?? {})),
      ...queueConsumers.flatMap((consumer) => [...(consumer.queueUrlVariable ? [[consumer.queueUrlVariable, consumer.queue] as [string, QueueDefinition]] : []), ...Object.entries(consumer.sendsTo ?? {})]),
    ];
    for (const [variable, definition] of queueVariables) {
      const known = stackSettings[variable as SettingName];
      const url = queueFor(definition).queueUrl;
      if (known && known !== url) throw new Error(`${variable} names two queues in functions/consumers.ts and the route groups`);
      stackSettings[variable as SettingName] = url;
    }

    const httpApi = new apigwv2.HttpApi(this, 'HttpApi', { apiName: 'agent-platform' });
    const routes: apigwv2.HttpRoute[] = [];
    let defaultRoute: apigwv2.HttpRoute | undefined;
    const httpApiGroups = routeGroups.filter((group) => !group.streaming);
    const streamingGroups = routeGroups.filter((group) => group.streaming);

    // HTTP API cannot stream a Lambda response, so streaming groups are served by a REST API with response
    // streaming instead, and CloudFront puts both behind one base address (docs/streaming.md).
    const accessLogs = new logs.LogGroup(this, 'AccessLogs', { retention: logRetention });
    const streamingApi = new apigateway.RestApi(this, 'StreamingApi', {
      restApiName: 'agent-platform-streaming',
      description: 'The streaming routes of the agent platform (Lambda response streaming); reached through CloudFront',
      endpointConfiguration: { types: [apigateway.EndpointType.REGIONAL] },
      // REST API logging needs the region's API Gateway CloudWatch role; kept when the stack goes, since other
      // stacks' APIs of the account may log through it too.
      cloudWatchRole: true,
      cloudWatchRoleRemovalPolicy: RemovalPolicy.RETAIN,
      deployOptions: {
        stageName: streamingStageName,
        accessLogDestination: new apigateway.LogGroupLogDestination(accessLogs),
        accessLogFormat: apigateway.AccessLogFormat.jsonWithStandardFields(),
        // Errors only, and never request or response bodies: they carry credentials and conversations.
        loggingLevel: apigateway.MethodLoggingLevel.ERROR,
        // X-Ray: the stage's segment, the function's beneath (the HTTP API has no X-Ray integration).
        tracingEnabled: true,
        dataTraceEnabled: false,
        throttlingRateLimit: stageThrottle.rateLimit,
        throttlingBurstLimit: stageThrottle.burstLimit,
        methodOptions: Object.fromEntries(
          streamingGroups.flatMap((group) =>
            Object.values(group.routes).flatMap((route) =>
              routePaths(route).map((path) => [
                `${path}/${route.method}`,
                { throttlingRateLimit: routeThrottle[route.method].rateLimit, throttlingBurstLimit: routeThrottle[route.method].burstLimit },
              ]),
            ),
          ),
        ),
      },
    });
    // StreamingApiUrl below replaces the REST API's automatic `Endpoint` output.
    streamingApi.node.tryRemoveChild('Endpoint');

    // Bedrock: the configured models only (LLMs, embeddings, rerank), none when none is configured.
    const { bedrock } = deployment.config.models;
    const bedrockModels = bedrockModelResources([...bedrock.llms, ...bedrock.embeddings, ...bedrock.rerank], this);
    const modelInvokers: Grantee[] = [];
    // Turns and knowledge queries rerank with Bedrock's Rerank API when a store names a rerank model; the action has
    // no resource type (the rerank model itself is authorised by InvokeModel).
    const rerankers: Grantee[] = [];
    const grantRerank = (fn: Grantee) => {
      if (bedrock.rerank.length === 0) return;
      rerankers.push(fn);
      fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['bedrock:Rerank'], resources: ['*'] }));
    };
    const grantModelInvocation = (fn: Grantee) => {
      if (bedrockModels.length === 0) return;
      modelInvokers.push(fn);
      fn.addToRolePolicy(new iam.PolicyStatement({ actions: bedrockInvokeActions, resources: bedrockModels }));
    };

    // Secrets at rest (docs/security.md#secrets-at-rest): the functions that create or rotate secrets may only make
    // data keys, the ones that sign with them may only unwrap them; the others cannot touch the key at all.
    const secretsKey = new kms.Key(this, 'SecretsKey', {
      description: 'agent-platform: seals webhook and function-tool signing secrets kept in the table (envelope encryption)',
      alias: `${this.stackName}/secrets`,
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    stackSettings.SECRETS_KMS_KEY_ID = secretsKey.keyArn;
    const grantSecretsKey = (fn: Grantee, access: { seals?: boolean | undefined; opens?: boolean | undefined }) => {
      if (access.seals) secretsKey.grant(fn, 'kms:GenerateDataKey');
      if (access.opens) secretsKey.grantDecrypt(fn);
    };

    // Knowledge stores' vectors (docs/knowledge.md): one S3 Vectors index per store in this bucket. Readers may only
    // query and list; deleting a document deletes its vectors by key; only ingestion creates and deletes indexes.
    const vectorBucket = new s3vectors.CfnVectorBucket(this, 'KnowledgeVectors', { encryptionConfiguration: { sseType: 'AES256' } });
    const knowledgeVectorUsers: Grantee[] = [];
    const knowledgeAccess = new Map<Grantee, 'query' | 'manage-documents' | 'ingest'>();
    const grantKnowledgeVectors = (fn: Grantee, access: 'query' | 'manage-documents' | 'ingest') => {
      knowledgeVectorUsers.push(fn);
      knowledgeAccess.set(fn, access);
      const actions = ['s3vectors:QueryVectors', 's3vectors:GetVectors', 's3vectors:ListVectors'];
      if (access !== 'query') actions.push('s3vectors:DeleteVectors');
      if (access === 'ingest') actions.push('s3vectors:PutVectors', 's3vectors:CreateIndex', 's3vectors:DeleteIndex', 's3vectors:GetIndex');
      fn.addToRolePolicy(new iam.PolicyStatement({ actions, resources: [`${vectorBucket.attrVectorBucketArn}/index/*`] }));
    };
    stackSettings.S3_VECTORS_BUCKET = Fn.select(1, Fn.split('/', vectorBucket.attrVectorBucketArn));

    for (const group of routeGroups) {
      const groupScope = new Construct(this, group.name);
      const fn = bundledFunction(groupScope, group.entry, {
        memoryMb: memoryMbOf(group.name),
        assets: group.assets,
        traced: true,
        timeout: Duration.seconds(functionTimeoutSeconds(group)),
        logRetention,
      });
      for (const definition of Object.values(group.queueUrls ?? {})) queueFor(definition).grantSendMessages(fn);
      fn.addToRolePolicy(
        new iam.PolicyStatement({
          actions: group.catchAll ? readOnlyActions : readWriteActions,
          resources: tableResources,
        }),
      );
      if (group.runsTurns || group.usesKnowledge) {
        grantModelInvocation(fn);
        grantRerank(fn);
      }
      if (group.usesKnowledge) grantKnowledgeVectors(fn, 'manage-documents');
      else if (group.runsTurns) grantKnowledgeVectors(fn, 'query');
      grantSecretsKey(fn, { seals: group.sealsSecrets, opens: group.runsTurns || group.opensSecrets });
      this.functions.set(group.name, fn);

      if (group.streaming) {
        const integration = new apigateway.LambdaIntegration(fn, {
          responseTransferMode: apigateway.ResponseTransferMode.STREAM,
          timeout: streamingTimeout,
          // Only the deployed stage may invoke the function; no permission for the console's test invoke.
          allowTestInvoke: false,
        });
        for (const [route, path] of Object.values(group.routes).flatMap((route) => routePaths(route).map((path) => [route, path] as const))) {
          const resource = resourceFor(streamingApi.root, path);
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
        // One invoke permission per function for this API, not one per route: a permission per route (and alias)
        // took the stack past CloudFormation's 500 resources. API Gateway still sends a function only its routes.
        scopePermissionToRoute: false,
      });
      for (const route of Object.values(group.routes)) {
        for (const path of routePaths(route)) routes.push(...httpApi.addRoutes({ path, methods: [apigwv2.HttpMethod[route.method]], integration }));
      }
      if (group.catchAll) {
        defaultRoute = new apigwv2.HttpRoute(groupScope, 'DefaultRoute', { httpApi, routeKey: apigwv2.HttpRouteKey.DEFAULT, integration });
      }
    }

    // Domain events, relayed from the table's stream; customers route them with EventBridge rules of their own.
    const eventBus = new events.EventBus(this, 'Events');
    stackSettings.EVENT_BUS_NAME = eventBus.eventBusName;
    // Stream consumers see only the records their filter selects; failed batches are bisected, retried, then parked.
    const streamFailures = deadLetterQueue(this, 'StreamFailures', 'table-stream', 'A table stream batch a consumer kept failing');
    for (const consumer of tableStreamConsumers) {
      const consumerScope = new Construct(this, consumer.name);
      const fn = bundledFunction(consumerScope, consumer.entry, { memoryMb: memoryMbOf(consumer.name), timeout: Duration.seconds(60), logRetention });
      for (const definition of Object.values(consumer.queueUrls ?? {})) queueFor(definition).grantSendMessages(fn);
      if (consumer.publishesEvents) eventBus.grantPutEventsTo(fn);
      if (consumer.worksOnTable) fn.addToRolePolicy(new iam.PolicyStatement({ actions: readWriteActions, resources: tableResources }));
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
    const ruleFailures = deadLetterQueue(this, 'EventRuleFailures', 'event-rules', 'An event EventBridge could not send to its target for 24 hours');
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
        memoryMb: memoryMbOf(consumer.name),
        timeout: Duration.seconds(consumer.timeoutSeconds),
        logRetention,
      });
      if (consumer.worksOnTable !== false) fn.addToRolePolicy(new iam.PolicyStatement({ actions: readWriteActions, resources: tableResources }));
      if (consumer.queueUrlVariable) queue.grantSendMessages(fn);
      for (const definition of Object.values(consumer.sendsTo ?? {})) queueFor(definition).grantSendMessages(fn);
      if (consumer.invokesModels) grantModelInvocation(fn);
      if (consumer.usesKnowledge) grantKnowledgeVectors(fn, 'ingest');
      else if (consumer.queriesKnowledge) grantKnowledgeVectors(fn, 'query');
      grantSecretsKey(fn, { opens: consumer.opensSecrets });
      fn.addEventSource(new SqsEventSource(queue, { batchSize: consumer.batchSize, reportBatchItemFailures: true }));
      this.functions.set(consumer.name, fn);
    }

    // Scheduled functions (the knowledge sweeper): an EventBridge rule on a rate; a missed run is made up by the next.
    for (const scheduled of scheduledFunctions) {
      const fn = bundledFunction(new Construct(this, scheduled.name), scheduled.entry, {
        memoryMb: memoryMbOf(scheduled.name),
        timeout: Duration.seconds(scheduled.timeoutSeconds),
        logRetention,
      });
      fn.addToRolePolicy(new iam.PolicyStatement({ actions: readWriteActions, resources: tableResources }));
      new events.Rule(this, `Schedule-${scheduled.name}`, {
        description: scheduled.description,
        schedule: events.Schedule.rate(Duration.minutes(scheduled.rateMinutes)),
        targets: [new eventTargets.LambdaFunction(fn, { retryAttempts: 2, maxEventAge: Duration.minutes(scheduled.rateMinutes) })],
      });
      this.functions.set(scheduled.name, fn);
    }

    // The L2 HttpApi takes no options for its default stage, so set throttling and access logging on the L1.
    const stage = httpApi.defaultStage?.node.defaultChild as apigwv2.CfnStage;
    stage.defaultRouteSettings = {
      throttlingRateLimit: stageThrottle.rateLimit,
      throttlingBurstLimit: stageThrottle.burstLimit,
    };
    // `routeSettings` is raw JSON to CloudFormation, so its keys are spelled as the template wants them.
    stage.routeSettings = Object.fromEntries(
      httpApiGroups.flatMap((group) =>
        Object.values(group.routes).flatMap((route) =>
          routeKeysOf(route).map((routeKey) => [
            routeKey,
            {
              ThrottlingRateLimit: routeThrottle[route.method].rateLimit,
              ThrottlingBurstLimit: routeThrottle[route.method].burstLimit,
            },
          ]),
        ),
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
      ...new Set(streamingGroups.flatMap((group) => Object.values(group.routes).flatMap((route) => routePaths(route).map((path) => cloudFrontPathPattern({ path }))))),
    ];
    // A pattern that also caught an HTTP API route would send it to the REST API, where it does not exist.
    for (const group of httpApiGroups) {
      for (const route of Object.values(group.routes)) {
        for (const path of routePaths(route)) {
          const pattern = streamingPatterns.find((candidate) => matchesPathPattern(candidate, path.replace(/\{[^}]+\}/g, 'x')));
          if (pattern) throw new Error(`${routeKeyOf({ method: route.method, path })} (group ${group.name}) would be routed to the streaming API by ${pattern}`);
        }
      }
    }
    // CloudFront's standard logs need a bucket that takes ACLs; kept 90 days.
    const distributionLogs = new s3.Bucket(this, 'DistributionLogs', {
      objectOwnership: s3.ObjectOwnership.OBJECT_WRITER,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      lifecycleRules: [{ expiration: Duration.days(90) }],
      removalPolicy: RemovalPolicy.RETAIN,
    });
    const distribution = new cloudfront.Distribution(this, 'Distribution', {
      comment: 'agent-platform: one base address for the HTTP API and the streaming REST API',
      enableLogging: true,
      logBucket: distributionLogs,
      logFilePrefix: 'cloudfront/',
      ...(domain
        ? {
            domainNames: [domain.name],
            certificate: acm.Certificate.fromCertificateArn(this, 'Certificate', domain.certificateArn),
            minimumProtocolVersion: cloudfront.SecurityPolicyProtocol.TLS_V1_2_2021,
          }
        : {}),
      ...(webAclArn ? { webAclId: webAclArn } : {}),
      defaultBehavior: {
        origin: new origins.HttpOrigin(Fn.select(2, Fn.split('/', httpApi.apiEndpoint)), {
          protocolPolicy: cloudfront.OriginProtocolPolicy.HTTPS_ONLY,
        }),
        ...noCache,
      },
      additionalBehaviors: Object.fromEntries(streamingPatterns.map((pattern) => [pattern, { origin: streamingOrigin, ...noCache }])),
    });

    const publicBaseUrl = `https://${domain?.name ?? distribution.distributionDomainName}`;
    stackSettings.PUBLIC_BASE_URL = publicBaseUrl;
    new CfnOutput(this, 'ApiBaseUrl', { value: publicBaseUrl, description: 'The public base address' });

    // Calls (docs/voice.md): ConversationRelay's WebSocket API and its function, the recordings bucket, and the
    // role EventBridge Scheduler sends each call's backstop with.
    const relayFunction = bundledFunction(new Construct(this, voiceRelayRoutes.name), voiceRelayRoutes.entry, {
      memoryMb: memoryMbOf(voiceRelayRoutes.name),
      traced: true,
      // A prompt's turn streams its tokens through the management API; the integration's answer does not wait for it.
      timeout: streamingTurnTimeout.plus(Duration.seconds(20)),
      logRetention,
    });
    relayFunction.addToRolePolicy(new iam.PolicyStatement({ actions: readWriteActions, resources: tableResources }));
    grantModelInvocation(relayFunction);
    grantRerank(relayFunction);
    grantKnowledgeVectors(relayFunction, 'query');
    grantSecretsKey(relayFunction, { opens: true });
    this.functions.set(voiceRelayRoutes.name, relayFunction);
    const relayIntegration = (id: string) => new WebSocketLambdaIntegration(id, relayFunction);
    const relayApi = new apigwv2.WebSocketApi(this, 'VoiceRelayApi', {
      apiName: 'agent-platform-voice-relay',
      description: "Twilio ConversationRelay's WebSocket: the function verifies X-Twilio-Signature on $connect",
      connectRouteOptions: { integration: relayIntegration('RelayConnect') },
      disconnectRouteOptions: { integration: relayIntegration('RelayDisconnect') },
      defaultRouteOptions: { integration: relayIntegration('RelayMessage') },
    });
    const relayStage = new apigwv2.WebSocketStage(this, 'VoiceRelayStage', {
      webSocketApi: relayApi,
      stageName: 'live',
      autoDeploy: true,
      throttle: stageThrottle,
      accessLogSettings: { destination: new apigwv2.LogGroupLogDestination(accessLogs) },
    });
    relayStage.grantManagementApiAccess(relayFunction);
    stackSettings.VOICE_RELAY_URL = relayStage.url;
    stackSettings.VOICE_RELAY_MANAGEMENT_ENDPOINT = relayStage.callbackUrl;

    const recordings = new s3.Bucket(this, 'Recordings', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      serverAccessLogsBucket: distributionLogs,
      serverAccessLogsPrefix: 'recordings/',
      lifecycleRules: [{ expiration: Duration.days(recordingRetentionDays), abortIncompleteMultipartUploadAfter: Duration.days(1) }],
      removalPolicy: RemovalPolicy.RETAIN,
    });
    const schedulerRole = new iam.Role(this, 'CallBackstopScheduler', {
      description: "EventBridge Scheduler's role for the one-time schedule of each call: it may only send to the call-backstop queue",
      assumedBy: new iam.ServicePrincipal('scheduler.amazonaws.com', { conditions: { StringEquals: { 'aws:SourceAccount': this.account } } }),
    });
    const backstopQueue = queueFor(callBackstopQueue);
    backstopQueue.grantSendMessages(schedulerRole);
    stackSettings.RECORDINGS_BUCKET = recordings.bucketName;
    stackSettings.CALL_BACKSTOP_QUEUE_ARN = backstopQueue.queueArn;
    stackSettings.SCHEDULER_ROLE_ARN = schedulerRole.roleArn;
    const backstopSchedulers: lambda.Function[] = [];
    const recordingReaders: lambda.Function[] = [];
    // The route groups that work with calls, and the campaign dispatcher, which places them (and schedules their backstops).
    const telephonyUnits = [
      ...routeGroups.flatMap((group) => (group.telephony ? [{ name: group.name, telephony: group.telephony }] : [])),
      ...queueConsumers.flatMap((consumer) => (consumer.placesCalls ? [{ name: consumer.name, telephony: { schedulesBackstops: true } as NonNullable<RouteGroup['telephony']> }] : [])),
    ];
    for (const group of telephonyUnits) {
      const fn = this.functions.get(group.name) as lambda.Function;
      const objects = recordings.arnForObjects('*');
      if (group.telephony.recordings === 'write') fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['s3:PutObject'], resources: [objects] }));
      if (group.telephony.recordings === 'read') fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['s3:GetObject'], resources: [objects] }));
      if (group.telephony.recordings) recordingReaders.push(fn);
      if (group.telephony.schedulesBackstops) {
        fn.addToRolePolicy(
          new iam.PolicyStatement({ actions: ['scheduler:CreateSchedule'], resources: [`arn:${this.partition}:scheduler:${this.region}:${this.account}:schedule/default/call-*`] }),
        );
        fn.addToRolePolicy(
          new iam.PolicyStatement({
            actions: ['iam:PassRole'],
            resources: [schedulerRole.roleArn],
            conditions: { StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } },
          }),
        );
        backstopSchedulers.push(fn);
      }
    }

    // The media worker (docs/deploy.md#the-media-worker), for the calls ConversationRelay cannot carry: it runs their
    // turns as the relay function does, with the relay's grants except its management API (the speech services' are its own).
    const { mediaWorker: workerConfig } = deployment.config;
    const mediaWorker = (this.mediaWorker =
      workerConfig.enabled && workerConfig.domain
        ? new MediaWorkerService(this, 'MediaWorker', { config: { ...workerConfig, domain: workerConfig.domain }, logRetention })
        : undefined);
    if (mediaWorker) {
      const worker: Grantee = { grantPrincipal: mediaWorker.taskRole, role: mediaWorker.taskRole, addToRolePolicy: (statement) => mediaWorker.taskRole.addToPrincipalPolicy(statement) };
      worker.addToRolePolicy(new iam.PolicyStatement({ actions: readWriteActions, resources: tableResources }));
      grantModelInvocation(worker);
      // Speech-to-speech models converse over one bidirectional stream a call; only the worker carries calls' audio.
      if (bedrock.sts.length > 0) {
        worker.addToRolePolicy(new iam.PolicyStatement({ actions: ['bedrock:InvokeModelWithBidirectionalStream'], resources: bedrockModelResources(bedrock.sts, this) }));
      }
      grantRerank(worker);
      grantKnowledgeVectors(worker, 'query');
      grantSecretsKey(worker, { opens: true });
      stackSettings.MEDIA_WORKER_URL = mediaWorker.url;
    }

    // WhatsApp customers' media (docs/whatsapp.md#media): the inbound function copies each file here from Meta, the
    // conversations function signs download URLs. Kept as long as call recordings.
    const whatsappMedia = new s3.Bucket(this, 'WhatsappMedia', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      serverAccessLogsBucket: distributionLogs,
      serverAccessLogsPrefix: 'whatsapp-media/',
      lifecycleRules: [{ expiration: Duration.days(recordingRetentionDays), abortIncompleteMultipartUploadAfter: Duration.days(1) }],
      removalPolicy: RemovalPolicy.RETAIN,
    });
    stackSettings.WHATSAPP_MEDIA_BUCKET = whatsappMedia.bucketName;
    const mediaUsers: lambda.Function[] = [];
    const mediaUnits = [...routeGroups, ...queueConsumers].flatMap((unit) => (unit.whatsappMedia ? [{ name: unit.name, access: unit.whatsappMedia }] : []));
    for (const unit of mediaUnits) {
      const fn = this.functions.get(unit.name)!;
      // A reader answers 404 for a media never kept: HeadObject needs ListBucket to tell a missing object from a forbidden one.
      if (unit.access === 'read') fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['s3:ListBucket'], resources: [whatsappMedia.bucketArn] }));
      fn.addToRolePolicy(new iam.PolicyStatement({ actions: [unit.access === 'read' ? 's3:GetObject' : 's3:PutObject'], resources: [whatsappMedia.arnForObjects('*')] }));
      mediaUsers.push(fn);
    }

    // BM25 index snapshots beside the vectors (docs/knowledge.md#retrieval): whoever queries a store reads the
    // snapshot of its revision or writes it after a rebuild; only ingestion deletes them, with the store. A snapshot
    // is a cache of the vectors' metadata, so old revisions simply expire. ListBucket makes a missing snapshot a 404, not a 403.
    const knowledgeSnapshots = new s3.Bucket(this, 'KnowledgeSnapshots', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      serverAccessLogsBucket: distributionLogs,
      serverAccessLogsPrefix: 'knowledge-snapshots/',
      lifecycleRules: [{ expiration: Duration.days(30), abortIncompleteMultipartUploadAfter: Duration.days(1) }],
      removalPolicy: RemovalPolicy.RETAIN,
    });
    stackSettings.KNOWLEDGE_SNAPSHOT_BUCKET = knowledgeSnapshots.bucketName;
    for (const [fn, access] of knowledgeAccess) {
      fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['s3:ListBucket'], resources: [knowledgeSnapshots.bucketArn] }));
      const objectActions = access === 'ingest' ? ['s3:GetObject', 's3:PutObject', 's3:DeleteObject'] : ['s3:GetObject', 's3:PutObject'];
      fn.addToRolePolicy(new iam.PolicyStatement({ actions: objectActions, resources: [knowledgeSnapshots.arnForObjects('ks-*')] }));
    }


    // Document uploads (docs/knowledge.md#uploads): presigned POSTs put files under uploads/; S3 reports each new
    // object to EventBridge (default bus), whose rule queues it for the router. A file is deleted once ingested, and
    // any left over (an ingestion that failed for good) after a day.
    const documentUploads = new s3.Bucket(this, 'KnowledgeUploads', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      serverAccessLogsBucket: distributionLogs,
      serverAccessLogsPrefix: 'knowledge-uploads/',
      // Browsers post the form straight from the customer's page; the presigned policy is what authorizes it.
      cors: [{ allowedMethods: [s3.HttpMethods.POST], allowedOrigins: ['*'], allowedHeaders: ['*'], maxAge: 3600 }],
      lifecycleRules: [{ prefix: uploadEventRule.keyPrefix, expiration: Duration.days(1), abortIncompleteMultipartUploadAfter: Duration.days(1) }],
      removalPolicy: RemovalPolicy.RETAIN,
    });
    // EventBridge notifications set on the bucket itself (CloudFormation supports them), rather than through CDK's
    // `eventBridgeEnabled`, which adds a custom-resource function with a managed policy.
    (documentUploads.node.defaultChild as s3.CfnBucket).notificationConfiguration = { eventBridgeConfiguration: { eventBridgeEnabled: true } };
    const uploadObjects = documentUploads.arnForObjects(`${uploadEventRule.keyPrefix}*`);
    stackSettings.KNOWLEDGE_UPLOAD_BUCKET = documentUploads.bucketName;
    const uploadUsers: lambda.Function[] = [];
    for (const group of routeGroups) {
      if (!group.usesKnowledge) continue;
      // Presigning a POST needs no call to S3, but S3 accepts the upload only if the signer may put the object.
      const fn = this.functions.get(group.name)!;
      fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['s3:PutObject'], resources: [uploadObjects] }));
      uploadUsers.push(fn);
    }
    for (const consumer of queueConsumers) {
      if (!consumer.readsUploads) continue;
      const fn = this.functions.get(consumer.name)!;
      fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['s3:GetObject', 's3:DeleteObject'], resources: [uploadObjects] }));
      uploadUsers.push(fn);
    }
    new events.Rule(this, `Rule-${uploadEventRule.name}`, {
      description: uploadEventRule.description,
      eventPattern: {
        source: ['aws.s3'],
        detailType: ['Object Created'],
        detail: { bucket: { name: [documentUploads.bucketName] }, object: { key: [{ prefix: uploadEventRule.keyPrefix }] } },
      },
      targets: [new eventTargets.SqsQueue(queueFor(uploadEventRule.target), { deadLetterQueue: ruleFailures, maxEventAge: Duration.hours(24), retryAttempts: 185 })],
    });

    // The campaign dispatcher's tick: one message a minute to the campaign queue, sent with a role that may only do that.
    const tickRole = new iam.Role(this, 'CampaignTickScheduler', {
      description: "EventBridge Scheduler's role for the campaign dispatcher's tick: it may only send to the campaign-dispatch queue",
      assumedBy: new iam.ServicePrincipal('scheduler.amazonaws.com', { conditions: { StringEquals: { 'aws:SourceAccount': this.account } } }),
    });
    const campaignDispatch = queueFor(campaignQueue);
    campaignDispatch.grantSendMessages(tickRole);
    new scheduler.CfnSchedule(this, 'CampaignTick', {
      description: 'The campaign dispatcher tick (docs/campaigns.md#dispatcher)',
      scheduleExpression: 'rate(1 minute)',
      flexibleTimeWindow: { mode: 'OFF' },
      target: { arn: campaignDispatch.queueArn, roleArn: tickRole.roleArn, input: JSON.stringify({ kind: 'campaign.tick' }) },
    });

    // Secret settings in use: the secret the file names, or one made here with no value, to be given one once
    // (docs/deploy.md#secrets). Kept when the stack goes: the value was put by hand.
    const secrets = new Map<SecretSettingName, secretsmanager.ISecret>();
    const createdSecrets: secretsmanager.CfnSecret[] = [];
    for (const [name, source] of Object.entries(deployment.secrets) as [SecretSettingName, SecretSource][]) {
      const id = `Secret-${name}`;
      if (source === 'create') {
        const secret = new secretsmanager.CfnSecret(this, id, { description: `agent-platform: ${name} (put its value once: docs/deploy.md#secrets)` });
        secret.applyRemovalPolicy(RemovalPolicy.RETAIN);
        createdSecrets.push(secret);
        secrets.set(name, secretsmanager.Secret.fromSecretCompleteArn(this, `${id}-Ref`, secret.ref));
        new CfnOutput(this, `${name.replaceAll('_', '')}SecretArn`, { value: secret.ref, description: `The secret to put ${name} in` });
      } else {
        secrets.set(name, secretsmanager.Secret.fromSecretCompleteArn(this, id, source.arn));
      }
    }

    // Each function, and the media worker, gets exactly the settings functions/settings.ts declares for it, from where
    // config.ts says they come: the deployment file, this stack's resources, a secret (its ARN, and the right to read it alone).
    const giveSettings = (name: string, addEnvironment: (name: string, value: string) => void, grantee: iam.IGrantable) => {
      for (const setting of settingsOf(name)) {
        const source = settingSources[setting];
        if (source === 'deployment' && deployment.settings[setting] !== undefined) addEnvironment(setting, deployment.settings[setting]);
        if (source === 'stack') {
          const value = stackSettings[setting];
          // Without the media worker there is no address to give: a function that would name it finds it unset.
          if (value === undefined && setting === 'MEDIA_WORKER_URL') continue;
          if (value === undefined) throw new Error(`The stack has no value for ${setting}, which ${name} reads (functions/settings.ts)`);
          addEnvironment(setting, value);
        }
        const secret = source === 'secret' ? secrets.get(setting as SecretSettingName) : undefined;
        if (secret) {
          addEnvironment(secretArnVariable(setting as SecretSettingName), secret.secretArn);
          secret.grantRead(grantee);
        }
      }
    };
    for (const [name, fn] of this.functions) giveSettings(name, (variable, value) => fn.addEnvironment(variable, value), fn);
    if (mediaWorker) giveSettings('media-worker', (variable, value) => mediaWorker.container.addEnvironment(variable, value), mediaWorker.taskRole);

    if (!defaultRoute) throw new Error('No route group is the catch-all.');
    const traced = [...routeGroups.map((group) => group.name), voiceRelayRoutes.name].map((name) => this.functions.get(name) as lambda.Function);
    const operations = (this.operations = new OperationsStack(this, 'Operations', {
      alarmTopic: alarms,
      alarmEmail: deployment.config.alarmEmail,
      functions: this.functions,
      tracedFunctions: traced,
      httpApi,
      streamingApi,
      table,
      deadLetterQueues,
    }));
    new CfnOutput(this, 'DashboardName', { value: operations.dashboard.dashboardName, description: 'The CloudWatch dashboard of the platform (docs/deploy.md#dashboards-and-alarms)' });
    suppressNagFindings({ httpApi, defaultRoute, streamingApi, distribution, distributionLogs, deadLetterQueues: [streamFailures, ruleFailures], modelInvokers, rerankers, knowledgeVectorUsers, uploadUsers, createdSecrets, deployment });
    suppressVoiceNagFindings({ relayApi, relayFunction, recordingReaders, backstopSchedulers });
    NagSuppressions.addResourceSuppressions(
      mediaUsers.map((fn) => fn.role as iam.Role),
      [
        {
          id: 'AwsSolutions-IAM5',
          reason: "WhatsApp media are objects named <org>/<session>/<media id> in a bucket of their own; one action (s3:PutObject for the inbound function, s3:GetObject for the one that signs download URLs) on its objects.",
          appliesTo: [{ regex: '/^Resource::<WhatsappMedia[A-Za-z0-9]+\\.Arn>\\/\\*$/g' }],
        },
      ],
      true,
    );
    new CfnOutput(this, 'VoiceRelayUrl', { value: relayStage.url, description: "ConversationRelay's WebSocket API (the TwiML of each call names it)" });
    if (mediaWorker) {
      new CfnOutput(this, 'MediaWorkerUrl', { value: mediaWorker.url, description: 'Where Twilio Media Streams connect the calls that do not go through ConversationRelay' });
      new CfnOutput(this, 'MediaWorkerLoadBalancer', {
        value: mediaWorker.loadBalancer.loadBalancerDnsName,
        description: "Point the media worker's domain (mediaWorker.domain.name) here: a CNAME, or an alias record",
      });
    }
    new CfnOutput(this, 'RecordingsBucket', { value: recordings.bucketName, description: 'Call recordings, copied from the carrier' });

    new CfnOutput(this, 'ApiUrl', { value: httpApi.apiEndpoint, description: 'The HTTP API directly (non-streaming routes; debugging)' });
    new CfnOutput(this, 'StreamingApiUrl', { value: streamingApi.url, description: 'The streaming REST API stage directly (debugging)' });
    new CfnOutput(this, 'TableName', { value: table.tableName });
    new CfnOutput(this, 'AlarmTopicArn', { value: alarms.topicArn, description: 'Every alarm of the stack notifies this topic (docs/deploy.md#dashboards-and-alarms)' });
    new CfnOutput(this, 'EventBusName', { value: eventBus.eventBusName, description: 'Domain events (source agent-platform) for your own EventBridge rules' });
  }
}

/**
 * The cdk-nag findings (AWS Solutions pack) that are not fixed, each with its evidence; `test/infra/nag.test.ts`
 * fails on any other, and docs/security.md lists them.
 */
function suppressNagFindings(stack: {
  httpApi: apigwv2.HttpApi;
  /** The catch-all route, which answers 404/405 in the envelope (and authenticates nothing, as it serves nothing). */
  defaultRoute: apigwv2.HttpRoute;
  streamingApi: apigateway.RestApi;
  distribution: cloudfront.Distribution;
  distributionLogs: s3.Bucket;
  deadLetterQueues: sqs.Queue[];
  modelInvokers: Grantee[];
  rerankers: Grantee[];
  knowledgeVectorUsers: Grantee[];
  uploadUsers: lambda.Function[];
  createdSecrets: secretsmanager.CfnSecret[];
  deployment: Deployment;
}): void {
  // Without Bedrock models, rerank models or secrets to make, those grants and secrets do not exist.
  const suppress = (constructs: IConstruct[], suppressions: NagPackSuppression[], applyToChildren = false) => {
    if (constructs.length > 0) NagSuppressions.addResourceSuppressions(constructs, suppressions, applyToChildren);
  };
  const inFunction =
    'Every route authenticates in its function, before anything else: an x-api-key looked up by its SHA-256 (strongly consistent, so a deleted key fails at once) or a bearer JWT verified against the JWKS (docs/auth.md); an API Gateway authorizer would only duplicate that with other error shapes.';
  NagSuppressions.addResourceSuppressions(
    [stack.httpApi, stack.defaultRoute, stack.streamingApi],
    [
      { id: 'AwsSolutions-APIG4', reason: inFunction },
      { id: 'AwsSolutions-COG4', reason: `${inFunction} Organizations bring their own identity provider (JWT_JWKS_URL), not a Cognito user pool.` },
    ],
    true,
  );
  NagSuppressions.addResourceSuppressions(
    stack.streamingApi,
    [
      {
        id: 'AwsSolutions-APIG2',
        reason: 'Every route declares zod schemas for its path, query and body, validated in the function and answered in the error envelope (docs/api-conventions.md); an API Gateway validator would duplicate that with another error shape.',
      },
      {
        id: 'AwsSolutions-APIG3',
        reason: 'The public address is the CloudFront distribution, where the optional web ACL goes (webAclArn); the stage also throttles per route.',
      },
    ],
    true,
  );
  NagSuppressions.addResourceSuppressions(
    stack.streamingApi,
    [
      {
        id: 'AwsSolutions-IAM4',
        reason: "API Gateway's CloudWatch role uses AWS's own AmazonAPIGatewayPushToCloudWatchLogs policy, the documented one for it; only apigateway.amazonaws.com assumes it.",
        appliesTo: ['Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs'],
      },
    ],
    true,
  );
  NagSuppressions.addResourceSuppressions(stack.distribution, [
    {
      id: 'AwsSolutions-CFR1',
      reason: 'A global API for organizations anywhere; restricting countries is a customer policy, which a web ACL (webAclArn) can apply.',
    },
  ]);
  if (!stack.deployment.config.webAclArn) {
    NagSuppressions.addResourceSuppressions(stack.distribution, [
      { id: 'AwsSolutions-CFR2', reason: 'The web ACL is a deployment option (webAclArn): rules and their cost are the operator\'s choice; throttling and authentication apply without it.' },
    ]);
  }
  if (!stack.deployment.config.domain) {
    NagSuppressions.addResourceSuppressions(stack.distribution, [
      {
        id: 'AwsSolutions-CFR4',
        reason: 'Without a custom domain (domainName and certificateArn) CloudFront serves its *.cloudfront.net certificate, whose viewer policy it fixes at TLSv1; with them the distribution requires TLS 1.2.',
      },
    ]);
  }
  NagSuppressions.addResourceSuppressions(stack.distributionLogs, [
    { id: 'AwsSolutions-S1', reason: 'This bucket receives the distribution\'s access logs; logging the access to the logs themselves would need yet another bucket.' },
  ]);
  NagSuppressions.addResourceSuppressions(stack.deadLetterQueues, [
    {
      id: 'AwsSolutions-SQS3',
      reason: 'A dead-letter queue itself (of the table stream consumers, or of the EventBridge rule targets), named by an event source mapping or a rule target rather than a redrive policy, so the rule cannot see it; it raises an alarm on its first message.',
    },
  ]);
  suppress(
    stack.modelInvokers.map((fn) => fn.role as iam.Role),
    [
      {
        id: 'AwsSolutions-IAM5',
        reason: 'Each configured model is named (models.bedrock of the deployment file); a cross-region inference profile (us.…, eu.…) sends a request to its model in whichever region of its geography Bedrock picks, so that model is granted in every region, as Bedrock\'s user guide prescribes for inference profiles. Only the functions that run turns, analyses or embeddings, and the media worker, which runs its calls\' turns, get it (test/infra/deployment.test.ts, test/infra/media-worker.test.ts).',
        appliesTo: [{ regex: '/^Resource::arn:<AWS::Partition>:bedrock:\\*::foundation-model\\/[^*]+$/g' }],
      },
    ],
    true,
  );
  suppress(stack.createdSecrets, [
    {
      id: 'AwsSolutions-SMG4',
      reason: 'These hold third-party API keys (the OpenAI-compatible provider, Stripe): a new key is made at the provider, so no rotation function can make one; the operator puts it with put-secret-value and every function reads it within 5 minutes (docs/deploy.md#secrets).',
    },
  ]);
  suppress(
    stack.rerankers.map((fn) => fn.role as iam.Role),
    [
      {
        id: 'AwsSolutions-IAM5',
        reason: 'bedrock:Rerank has no resource type: AWS documents it granted on "*" (Bedrock user guide, "Permissions for reranking in Amazon Bedrock", standalone Rerank: bedrock:Rerank plus bedrock:InvokeModel scoped to the rerank models); the model is still authorised by the InvokeModel statement. Only functions that run turns or knowledge queries, and the media worker, get it (test/infra/stack.test.ts, test/infra/media-worker.test.ts).',
        appliesTo: ['Resource::*'],
      },
    ],
    true,
  );
  NagSuppressions.addResourceSuppressions(
    stack.knowledgeVectorUsers.map((fn) => fn.role as iam.Role),
    [
      {
        id: 'AwsSolutions-IAM5',
        reason: 'One S3 Vectors index per knowledge store, created at run time when its first document is ingested, and its BM25 snapshots under the prefix of its index name (ks-<storeId>/); the grants are limited to the indexes of the platform\'s own vector bucket and the ks- objects of its snapshot bucket, with the actions each function (and the media worker) needs (test/infra/stack.test.ts, test/infra/media-worker.test.ts).',
        appliesTo: ['Resource::<KnowledgeVectors.VectorBucketArn>/index/*', { regex: '/^Resource::<KnowledgeSnapshots[0-9A-F]{8}\\.Arn>\\/ks-\\*$/g' }],
      },
    ],
    true,
  );
  NagSuppressions.addResourceSuppressions(
    stack.uploadUsers.map((fn) => fn.role as iam.Role),
    [
      {
        id: 'AwsSolutions-IAM5',
        reason: "Each upload is an object named uploads/<org>/<store>/<document>/v<version>, known only at run time; the knowledge API may only put them (to presign POSTs), the ingestion only get and delete them, in the uploads bucket's uploads/ prefix (test/infra/stack.test.ts).",
        appliesTo: [{ regex: '/^Resource::<KnowledgeUploads[A-Za-z0-9]+\\.Arn>\\/uploads\\/\\*$/g' }],
      },
    ],
    true,
  );
}

/** The voice resources' cdk-nag findings that stay, each with its evidence (docs/security.md#cdk-nag). */
function suppressVoiceNagFindings(voice: {
  relayApi: apigwv2.WebSocketApi;
  relayFunction: lambda.Function;
  recordingReaders: lambda.Function[];
  backstopSchedulers: lambda.Function[];
}): void {
  NagSuppressions.addResourceSuppressions(
    voice.relayApi,
    [
      {
        id: 'AwsSolutions-APIG4',
        reason: "Twilio connects with no credential of ours: $connect verifies X-Twilio-Signature (HMAC-SHA1 of the relay URL under the organization's auth token) in the function and refuses the upgrade (403) otherwise; later messages are accepted only on a connection bound to an open call (test/voice/conversation.test.ts).",
      },
    ],
    true,
  );
  NagSuppressions.addResourceSuppressions(
    voice.relayFunction.role as iam.Role,
    [
      {
        id: 'AwsSolutions-IAM5',
        reason: "The management API's resource names each connection (@connections/<id>); the grant is limited to this API's live stage.",
        appliesTo: [{ regex: '/^Resource::arn:<AWS::Partition>:execute-api:<AWS::Region>:<AWS::AccountId>:<VoiceRelayApi[A-Za-z0-9]+>\\/live\\/\\*\\/@connections\\/\\*$/g' }],
      },
    ],
    true,
  );
  NagSuppressions.addResourceSuppressions(
    voice.recordingReaders.map((fn) => fn.role as iam.Role),
    [
      {
        id: 'AwsSolutions-IAM5',
        reason: 'Recordings are objects named <org>/<session>/<recording>.mp3 in a bucket of their own; one action (s3:PutObject for the callback function, s3:GetObject for the one that signs download URLs) on its objects.',
        appliesTo: [{ regex: '/^Resource::<Recordings[A-Za-z0-9]+\\.Arn>\\/\\*$/g' }],
      },
    ],
    true,
  );
  NagSuppressions.addResourceSuppressions(
    voice.backstopSchedulers.map((fn) => fn.role as iam.Role),
    [
      {
        id: 'AwsSolutions-IAM5',
        reason: 'One schedule per call, named call-<sessionId> at run time; only scheduler:CreateSchedule on that name prefix in the default group.',
        appliesTo: ['Resource::arn:<AWS::Partition>:scheduler:<AWS::Region>:<AWS::AccountId>:schedule/default/call-*'],
      },
    ],
    true,
  );
}

/**
 * What invoking the configured Bedrock models needs, and no more: a model id (`anthropic.claude-…`) is the foundation
 * model in the stack's region; a cross-region inference profile (`us.anthropic.claude-…`) is the profile, plus its
 * model in whichever region the profile routes a request to (Bedrock user guide, "Prerequisites for inference
 * profiles": the profile and the foundation model in each destination region).
 */
function bedrockModelResources(modelIds: readonly string[], stack: Stack): string[] {
  const resources = new Set<string>();
  for (const id of modelIds) {
    const geography = inferenceProfileGeographies.find((prefix) => id.startsWith(`${prefix}.`));
    if (!geography) {
      resources.add(`arn:${stack.partition}:bedrock:${stack.region}::foundation-model/${id}`);
      continue;
    }
    resources.add(`arn:${stack.partition}:bedrock:${stack.region}:${stack.account}:inference-profile/${id}`);
    resources.add(`arn:${stack.partition}:bedrock:*::foundation-model/${id.slice(geography.length + 1)}`);
  }
  return [...resources];
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

/**
 * A Lambda function bundled from a handler module by infra/bundling.ts, as `npm run bench` bundles it: esbuild's
 * JavaScript API in this process (never Docker), split so that a rare path's dependencies load only when it runs.
 */
function bundledFunction(
  scope: Construct,
  entry: string,
  options: {
    /** From the function's declaration (functions/lambda-functions.ts). */
    memoryMb: number;
    timeout: Duration;
    logRetention: logs.RetentionDays;
    assets?: string | undefined;
    /** On the request path: X-Ray active tracing, and Powertools Tracer (shared/platform/tracing.ts) told so. */
    traced?: boolean;
  },
): lambda.Function {
  // An explicit log group avoids CDK's log-retention custom resource; an explicit role may write to it alone,
  // instead of the AWSLambdaBasicExecutionRole managed policy, which allows every log group of the account.
  const logGroup = new logs.LogGroup(scope, 'Logs', { retention: options.logRetention });
  const role = new iam.Role(scope, 'Role', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
  logGroup.grantWrite(role);
  const code = lambda.Code.fromAsset(path.join(repoRoot, path.dirname(entry)), {
    assetHashType: AssetHashType.OUTPUT,
    bundling: {
      // Never used: local bundling always succeeds or throws.
      image: DockerImage.fromRegistry('scratch'),
      local: {
        tryBundle(outputDir) {
          bundleFunctionSync(path.join(repoRoot, entry), outputDir, repoRoot);
          // The group's built pages and scripts, beside the handler, where it reads them (`./assets/`).
          if (options.assets) cpSync(path.join(repoRoot, options.assets), path.join(outputDir, 'assets'), { recursive: true });
          return true;
        },
      },
    },
  });
  return new lambda.Function(scope, 'Function', {
    code,
    role,
    handler: `${path.basename(bundleEntryFile, '.mjs')}.handler`,
    runtime: lambda.Runtime.NODEJS_24_X,
    architecture: lambda.Architecture.ARM_64,
    memorySize: options.memoryMb,
    timeout: options.timeout,
    logGroup,
    // Settings come later, each function its own (functions/settings.ts).
    environment: {
      NODE_OPTIONS: '--enable-source-maps',
      POWERTOOLS_SERVICE_NAME: 'agent-platform',
      ...(options.traced ? { POWERTOOLS_TRACE_ENABLED: 'true' } : {}),
    },
    ...(options.traced ? { tracing: lambda.Tracing.ACTIVE } : {}),
  });
}
