import { cpSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { Duration, Names, Stack, Stage } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import { Platform } from 'aws-cdk-lib/aws-ecr-assets';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as elbv2 from 'aws-cdk-lib/aws-elasticloadbalancingv2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import { NagSuppressions, type NagPackSuppression } from 'cdk-nag';
import { Construct, type IConstruct } from 'constructs';
import { activeCallsMetric } from '../services/media-worker/active-calls.ts';
import { metricsNamespace, metricsService } from '../shared/platform/metrics.ts';
import { bundleFunctionSync } from './bundling.ts';
import type { DeploymentConfig } from './deployment-config.ts';

/** The worker's entry and its Dockerfile (decision 438). */
const mediaWorkerEntry = 'services/media-worker/main.ts';
/** The path Twilio Media Streams connect to; the load balancer forwards it and browsers' voice sessions alone. */
const mediaStreamPath = '/media-stream';
/** Browsers' voice sessions: `/voice-session/{orgId}/{sessionId}` (shared/voice/voice.ts, `voiceSessionPath`). */
const voiceSessionPattern = '/voice-session/*';
/** The port the worker listens on in its container (the image's PORT). */
const containerPort = 8080;
/**
 * How long a stopping task's connections may still run: ALB's maximum, longer than the longest outbound call (ttl ≤
 * 1800 s). A task with no connection deregisters at once, so an idle task pays nothing for it.
 */
const deregistrationDelay = Duration.seconds(3600);
/**
 * How long a connection may carry nothing before the load balancer closes it. Twilio sends a media frame every 20 ms
 * for the whole call, so only a dead connection is idle this long.
 */
const loadBalancerIdleTimeout = Duration.seconds(300);
/** ECS waits this long between SIGTERM and SIGKILL: Fargate's maximum. */
const stopTimeout = Duration.seconds(120);
/** Amazon Polly and Amazon Transcribe streaming, the worker's speech services on AWS. */
const speechActions = ['polly:SynthesizeSpeech', 'transcribe:StartStreamTranscription', 'transcribe:StartStreamTranscriptionWebSocket'];

type EnabledWorker = DeploymentConfig['mediaWorker'] & { domain: NonNullable<DeploymentConfig['mediaWorker']['domain']> };

export interface MediaWorkerServiceProps {
  config: EnabledWorker;
  logRetention: logs.RetentionDays;
}

/**
 * The media worker on AWS (docs/deploy.md#the-media-worker): an ECS Fargate service on arm64 in a cluster and VPC of
 * its own, behind an Application Load Balancer that forwards Twilio's WebSocket upgrades on `/media-stream/*` over
 * HTTPS, scaled on the calls its tasks carry. The stack gives its container its settings and its task role its grants.
 */
export class MediaWorkerService extends Construct {
  /** `wss://<domain>/media-stream`: what the TwiML of a call through the worker names (MEDIA_WORKER_URL). */
  readonly url: string;
  readonly container: ecs.ContainerDefinition;
  /** What the worker's code may do: the speech services here; the stack adds the table, models and secrets. */
  readonly taskRole: iam.Role;
  /** Its DNS name is where the worker's domain must point. */
  readonly loadBalancer: elbv2.ApplicationLoadBalancer;

  constructor(scope: Construct, id: string, props: MediaWorkerServiceProps) {
    super(scope, id);
    const { config } = props;
    this.url = `wss://${config.domain.name}${mediaStreamPath}`;

    // Public subnets only, no NAT gateway: the tasks reach DynamoDB, the providers and ECR through their own public
    // address, and their security group admits nothing but the load balancer (decision 476).
    const vpc = new ec2.Vpc(this, 'Vpc', {
      maxAzs: 2,
      natGateways: 0,
      subnetConfiguration: [{ name: 'public', subnetType: ec2.SubnetType.PUBLIC, cidrMask: 24 }],
    });
    vpc.addFlowLog('RejectedTraffic', {
      destination: ec2.FlowLogDestination.toCloudWatchLogs(new logs.LogGroup(this, 'FlowLogs', { retention: props.logRetention })),
      trafficType: ec2.FlowLogTrafficType.REJECT,
    });

    const loadBalancerGroup = new ec2.SecurityGroup(this, 'LoadBalancerSecurity', {
      vpc,
      description: 'The media worker load balancer: HTTPS from anywhere (Twilio media servers), out to the tasks only',
      allowAllOutbound: false,
    });
    loadBalancerGroup.addIngressRule(ec2.Peer.anyIpv4(), ec2.Port.tcp(443), 'Twilio Media Streams (wss)');
    const loadBalancer = (this.loadBalancer = new elbv2.ApplicationLoadBalancer(this, 'LoadBalancer', {
      vpc,
      internetFacing: true,
      securityGroup: loadBalancerGroup,
      idleTimeout: loadBalancerIdleTimeout,
      dropInvalidHeaderFields: true,
    }));

    const targets = new elbv2.ApplicationTargetGroup(this, 'Targets', {
      vpc,
      targetType: elbv2.TargetType.IP,
      port: containerPort,
      protocol: elbv2.ApplicationProtocol.HTTP,
      deregistrationDelay,
      // No stickiness: a call is one WebSocket connection, which stays on the task it reached.
      healthCheck: { path: '/health', interval: Duration.seconds(10), timeout: Duration.seconds(5), healthyThresholdCount: 2, unhealthyThresholdCount: 3 },
    });
    const listener = loadBalancer.addListener('Https', {
      port: 443,
      protocol: elbv2.ApplicationProtocol.HTTPS,
      certificates: [elbv2.ListenerCertificate.fromArn(config.domain.certificateArn)],
      sslPolicy: elbv2.SslPolicy.RECOMMENDED_TLS,
      open: false,
      defaultAction: elbv2.ListenerAction.fixedResponse(404, { contentType: 'application/json', messageBody: '{"error":"NOT_FOUND"}' }),
    });
    // A call's stream URL names its organization and session below the path (decision 460), as a browser's does.
    listener.addAction('MediaStream', { priority: 10, conditions: [elbv2.ListenerCondition.pathPatterns([`${mediaStreamPath}/*`, voiceSessionPattern])], action: elbv2.ListenerAction.forward([targets]) });

    const cluster = new ecs.Cluster(this, 'Cluster', { vpc });
    this.taskRole = new iam.Role(this, 'TaskRole', {
      description: "The media worker's code: the table, the configured models, its secrets and speech services, nothing else",
      assumedBy: new iam.ServicePrincipal('ecs-tasks.amazonaws.com'),
    });
    // Amazon Polly and Amazon Transcribe streaming. Neither action has a resource type to name (Polly's lexicons are
    // not used), so both are held to the stack's region.
    this.taskRole.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: speechActions,
        resources: ['*'],
        conditions: { StringEquals: { 'aws:RequestedRegion': Stack.of(this).region } },
      }),
    );
    const task = new ecs.FargateTaskDefinition(this, 'Task', {
      cpu: config.cpu,
      memoryLimitMiB: config.memoryMiB,
      runtimePlatform: { cpuArchitecture: ecs.CpuArchitecture.ARM64, operatingSystemFamily: ecs.OperatingSystemFamily.LINUX },
      taskRole: this.taskRole,
      // The task's ephemeral storage, the one place the read-only image may write (the speech engines' scratch files).
      volumes: [{ name: 'tmp' }],
    });
    this.container = task.addContainer('Worker', {
      image: ecs.ContainerImage.fromAsset(imageContext(this), { platform: Platform.LINUX_ARM64 }),
      logging: ecs.LogDrivers.awsLogs({ streamPrefix: 'media-worker', logGroup: new logs.LogGroup(this, 'Logs', { retention: props.logRetention }) }),
      portMappings: [{ containerPort }],
      readonlyRootFilesystem: true,
      stopTimeout,
      // AWS_REGION as Lambda sets it for the functions: the settings default to us-east-1 without it.
      environment: { AWS_REGION: Stack.of(this).region, POWERTOOLS_SERVICE_NAME: metricsService, PORT: String(containerPort) },
    });
    this.container.addMountPoints({ sourceVolume: 'tmp', containerPath: '/tmp', readOnly: false });

    const tasks = new ec2.SecurityGroup(this, 'TaskSecurity', {
      vpc,
      description: 'The media worker tasks: reached by their load balancer alone',
      // Out to AWS's endpoints, the speech and model providers and customers' tools, on whatever port they serve.
      allowAllOutbound: true,
    });
    const service = new ecs.FargateService(this, 'Service', {
      cluster,
      taskDefinition: task,
      desiredCount: config.minTasks,
      assignPublicIp: true,
      vpcSubnets: { subnetType: ec2.SubnetType.PUBLIC },
      securityGroups: [tasks],
      // A deployment starts the new tasks before the old ones drain.
      minHealthyPercent: 100,
      maxHealthyPercent: 200,
      circuitBreaker: { rollback: true },
      healthCheckGracePeriod: Duration.seconds(30),
    });
    // Also opens the tasks' port to the load balancer's security group, and that group's egress to them, alone.
    service.attachToApplicationTargetGroup(targets);

    // Each task reports its calls every 10 s; the average per task is held at callsPerTask.
    service.autoScaleTaskCount({ minCapacity: config.minTasks, maxCapacity: config.maxTasks }).scaleToTrackCustomMetric('ActiveCalls', {
      metric: new cloudwatch.Metric({
        namespace: metricsNamespace,
        metricName: activeCallsMetric.name,
        dimensionsMap: { service: metricsService },
        statistic: cloudwatch.Stats.AVERAGE,
        period: Duration.minutes(1),
      }),
      targetValue: config.callsPerTask,
      scaleOutCooldown: Duration.minutes(1),
      // Scaling in only releases tasks without calls (task protection), so it need not hurry.
      scaleInCooldown: Duration.minutes(5),
    });
    suppressNagFindings({ loadBalancerGroup, loadBalancer, cluster, task, taskRole: this.taskRole });
  }
}

/** The worker's cdk-nag findings that stay, each with its evidence (docs/security.md#cdk-nag). */
function suppressNagFindings(worker: {
  loadBalancerGroup: ec2.SecurityGroup;
  loadBalancer: elbv2.ApplicationLoadBalancer;
  cluster: ecs.Cluster;
  task: ecs.FargateTaskDefinition;
  taskRole: iam.Role;
}): void {
  const suppressions: [IConstruct, NagPackSuppression][] = [
    [
      worker.loadBalancerGroup,
      {
        id: 'AwsSolutions-EC23',
        reason: "Twilio's media servers connect from addresses it does not publish as a list for Media Streams; only 443 is open, and the worker accepts a stream only with a valid X-Twilio-Signature on the upgrade and the call's single-use token at its start (decision 438).",
      },
    ],
    [
      worker.loadBalancer,
      {
        id: 'AwsSolutions-ELB2',
        reason: "Access logs need the bucket policy to name the Elastic Load Balancing account of the stack's region (regions before August 2022) or its log-delivery service (later ones), which an environment-agnostic stack cannot tell at synth; the worker logs each stream it accepts or refuses, and the load balancer's rejected connections, TLS errors and 5xx are its CloudWatch metrics.",
      },
    ],
    [
      worker.cluster,
      {
        id: 'AwsSolutions-ECS4',
        reason: "Container Insights bills its metrics per task; the service's CPU and memory use (AWS/ECS, free) and the ActiveCalls metric the autoscaling reads show what an operator needs of one service.",
      },
    ],
    [
      worker.task,
      {
        id: 'AwsSolutions-ECS2',
        reason: "The variables are the worker's settings (the table's name, addresses, model lists, functions/settings.ts), as the Lambda functions get theirs; a secret is only ever its Secrets Manager ARN, its value read at run time (docs/deploy.md#secrets).",
      },
    ],
    [
      worker.task.obtainExecutionRole(),
      {
        id: 'AwsSolutions-IAM5',
        reason: "ecr:GetAuthorizationToken has no resource type (ECR's documented policy grants it on *); pulling is granted on the image asset's repository alone, and logs on the worker's log group alone.",
        appliesTo: ['Resource::*'],
      },
    ],
    [
      worker.taskRole,
      {
        id: 'AwsSolutions-IAM5',
        reason: "polly:SynthesizeSpeech (without lexicons) and transcribe:StartStreamTranscription(WebSocket) have no resource type to name; they are held to the stack's region (aws:RequestedRegion), and only the media worker gets them (test/infra/media-worker.test.ts).",
        appliesTo: ['Resource::*'],
      },
    ],
  ];
  // With their children: a role's finding is on its default policy.
  for (const [construct, suppression] of suppressions) NagSuppressions.addResourceSuppressions(construct, [suppression], true);
}

/**
 * The image's build context: the Dockerfile beside the worker bundled as the Lambda functions are (esbuild, by
 * infra/bundling.ts), staged under the assembly's directory. The synth records it as an asset; Docker builds it only
 * at deploy. When the stack skips bundling (tests of the template), the bundle is left out.
 */
function imageContext(scope: Construct): string {
  const stack = Stack.of(scope);
  const repoRoot = path.resolve(import.meta.dirname, '..');
  const context = path.join(Stage.of(stack)?.outdir ?? path.join(repoRoot, 'cdk.out'), `media-worker-image-${Names.uniqueId(scope)}`);
  mkdirSync(path.join(context, 'bundle'), { recursive: true });
  cpSync(path.join(repoRoot, path.dirname(mediaWorkerEntry), 'Dockerfile'), path.join(context, 'Dockerfile'));
  if (stack.bundlingRequired) bundleFunctionSync(path.join(repoRoot, mediaWorkerEntry), path.join(context, 'bundle'), repoRoot);
  return context;
}
