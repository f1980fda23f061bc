/**
 * The media worker on AWS (infra/media-worker-service.ts): the stack of deploy/example.json, where the worker is
 * enabled, synthesized once without bundling (the template is under test), and the image's build context staged with
 * the worker's bundle in a stack of the worker alone.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { App, Stack, type CfnElement } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as logs from 'aws-cdk-lib/aws-logs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { functionSettings, settingsOf } from '../../functions/settings.ts';
import { checkDeploymentConfig, loadDeploymentConfig } from '../../infra/deployment-config.ts';
import { MediaWorkerService } from '../../infra/media-worker-service.ts';
import { AgentPlatformStack } from '../../infra/stack.ts';
import { secretSettings, settingSources } from '../../shared/platform/config.ts';
import { mediaStreamUrl, type VoiceDeps } from '../../shared/voice/voice.ts';

interface Resource {
  Type: string;
  Properties: Record<string, any>;
}
interface Statement {
  Action: string | string[];
  Resource: unknown;
  Condition?: unknown;
}

const repoRoot = resolve(import.meta.dirname, '../..');
const { context } = JSON.parse(readFileSync(join(repoRoot, 'cdk.json'), 'utf8')) as { context: Record<string, unknown> };
const exampleFile = JSON.parse(readFileSync(join(repoRoot, 'deploy/example.json'), 'utf8')) as { mediaWorker: Record<string, any> };
const worker = exampleFile.mediaWorker;
const asArray = <T>(value: T | T[] | undefined): T[] => (value === undefined ? [] : Array.isArray(value) ? value : [value]);
const outdir = mkdtempSync(join(tmpdir(), 'media-worker-test-'));
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

let stack: AgentPlatformStack;
let resources: Record<string, Resource>;
const ofType = (type: string) => Object.entries(resources).filter(([, candidate]) => candidate.Type === type);
const only = (type: string): [string, Resource] => {
  const found = ofType(type);
  expect(found, type).toHaveLength(1);
  return found[0] as [string, Resource];
};
const idOf = (construct: { node: { defaultChild?: unknown } }) => stack.getLogicalId(construct.node.defaultChild as CfnElement);

beforeAll(() => {
  const app = new App({ context: { ...context, 'aws:cdk:bundling-stacks': [] }, outdir: join(outdir, 'example') });
  stack = new AgentPlatformStack(app, 'Example', { deployment: loadDeploymentConfig(join(repoRoot, 'deploy/example.json')) });
  resources = Template.fromStack(stack).toJSON().Resources as Record<string, Resource>;
}, 300_000);

describe('the media worker of deploy/example.json', () => {
  it('is a Fargate service on arm64 in a cluster of its own, sized by the file, its image an asset the synth records without Docker', () => {
    const [, definition] = only('AWS::ECS::TaskDefinition');
    const [, service] = only('AWS::ECS::Service');
    const container = definition.Properties.ContainerDefinitions[0];

    expect(definition.Properties).toMatchObject({
      RequiresCompatibilities: ['FARGATE'],
      NetworkMode: 'awsvpc',
      RuntimePlatform: { CpuArchitecture: 'ARM64', OperatingSystemFamily: 'LINUX' },
      Cpu: String(worker.cpu),
      Memory: String(worker.memoryMiB),
    });
    expect(service.Properties).toMatchObject({ LaunchType: 'FARGATE', DesiredCount: worker.minTasks, Cluster: { Ref: only('AWS::ECS::Cluster')[0] } });
    expect(service.Properties.NetworkConfiguration.AwsvpcConfiguration.AssignPublicIp).toBe('ENABLED');
    expect(JSON.stringify(container.Image)).toContain('cdk-hnb659fds-container-assets');
    const assets = JSON.parse(readFileSync(join(outdir, 'example', 'Example.assets.json'), 'utf8')) as { dockerImages: Record<string, { source: { directory: string; platform?: string } }> };
    const images = Object.values(assets.dockerImages);
    expect(images).toHaveLength(1);
    expect(images[0]?.source.platform).toBe('linux/arm64');
    expect(JSON.stringify(container.Image)).toContain(Object.keys(assets.dockerImages)[0]);
  });

  it('runs read-only with a writable /tmp, and gives calls the longest stop Fargate allows', () => {
    const [, definition] = only('AWS::ECS::TaskDefinition');
    const container = definition.Properties.ContainerDefinitions[0];

    expect(container).toMatchObject({ ReadonlyRootFilesystem: true, StopTimeout: 120, PortMappings: [{ ContainerPort: 8080, Protocol: 'tcp' }] });
    expect(container.MountPoints).toEqual([{ ContainerPath: '/tmp', ReadOnly: false, SourceVolume: 'tmp' }]);
    expect(definition.Properties.Volumes).toEqual([{ Name: 'tmp' }]);
    expect(container.LogConfiguration.LogDriver).toBe('awslogs');
  });

  it('is reached over HTTPS on its domain, on /media-stream/* (every call stream URL) and browsers’ /voice-session/* alone, through a load balancer that keeps calls open and drains them', () => {
    const [, loadBalancer] = only('AWS::ElasticLoadBalancingV2::LoadBalancer');
    const [listenerId, listener] = only('AWS::ElasticLoadBalancingV2::Listener');
    const [targetsId, targets] = only('AWS::ElasticLoadBalancingV2::TargetGroup');
    const [, rule] = only('AWS::ElasticLoadBalancingV2::ListenerRule');
    const attributes = (list: { Key: string; Value: string }[]) => Object.fromEntries(list.map(({ Key, Value }) => [Key, Value]));

    expect(loadBalancer.Properties).toMatchObject({ Scheme: 'internet-facing', Type: 'application' });
    expect(attributes(loadBalancer.Properties.LoadBalancerAttributes)).toMatchObject({ 'idle_timeout.timeout_seconds': '300', 'routing.http.drop_invalid_header_fields.enabled': 'true' });
    expect(listener.Properties).toMatchObject({
      Port: 443,
      Protocol: 'HTTPS',
      SslPolicy: 'ELBSecurityPolicy-TLS13-1-2-2021-06',
      Certificates: [{ CertificateArn: worker.domain.certificateArn }],
      DefaultActions: [{ Type: 'fixed-response', FixedResponseConfig: { StatusCode: '404' } }],
    });
    expect(rule.Properties).toMatchObject({
      ListenerArn: { Ref: listenerId },
      Conditions: [{ Field: 'path-pattern', PathPatternConfig: { Values: ['/media-stream/*', '/voice-session/*'] } }],
      Actions: [{ Type: 'forward', TargetGroupArn: { Ref: targetsId } }],
    });
    // The path of a call's stream, as its TwiML names it, is one the rule forwards (ALB patterns: `*` any characters).
    const streamPath = new URL(mediaStreamUrl({ config: { MEDIA_WORKER_URL: `wss://${worker.domain.name}/media-stream` } } as VoiceDeps, crypto.randomUUID(), crypto.randomUUID())).pathname;
    const forwarded = (rule.Properties.Conditions[0].PathPatternConfig.Values as string[]).map((pattern) => new RegExp(`^${pattern.replaceAll('*', '.*').replaceAll('?', '.')}$`));
    expect(forwarded.some((pattern) => pattern.test(streamPath)), streamPath).toBe(true);
    expect(targets.Properties).toMatchObject({ TargetType: 'ip', Port: 8080, Protocol: 'HTTP', HealthCheckPath: '/health' });
    expect(attributes(targets.Properties.TargetGroupAttributes)).toEqual({ 'deregistration_delay.timeout_seconds': '3600', 'stickiness.enabled': 'false' });
    expect(only('AWS::ECS::Service')[1].Properties.LoadBalancers).toEqual([{ ContainerName: 'Worker', ContainerPort: 8080, TargetGroupArn: { Ref: targetsId } }]);
  });

  it('scales between the configured tasks to hold the average of ActiveCalls per task at callsPerTask', () => {
    const [targetId, target] = only('AWS::ApplicationAutoScaling::ScalableTarget');
    const [, policy] = only('AWS::ApplicationAutoScaling::ScalingPolicy');

    expect(target.Properties).toMatchObject({ MinCapacity: worker.minTasks, MaxCapacity: worker.maxTasks, ScalableDimension: 'ecs:service:DesiredCount', ServiceNamespace: 'ecs' });
    expect(policy.Properties).toMatchObject({
      PolicyType: 'TargetTrackingScaling',
      ScalingTargetId: { Ref: targetId },
      TargetTrackingScalingPolicyConfiguration: {
        TargetValue: worker.callsPerTask,
        CustomizedMetricSpecification: { Namespace: 'AgentPlatform', MetricName: 'ActiveCalls', Dimensions: [{ Name: 'service', Value: 'agent-platform' }], Statistic: 'Average' },
      },
    });
  });

  it('admits to its tasks only the load balancer, which admits HTTPS alone', () => {
    const [loadBalancerGroupId] = ofType('AWS::EC2::SecurityGroup').find(([, group]) => asArray(group.Properties.SecurityGroupIngress).length > 0) as [string, Resource];
    const [, loadBalancerGroup] = ofType('AWS::EC2::SecurityGroup').find(([id]) => id === loadBalancerGroupId) as [string, Resource];
    const taskGroupId = only('AWS::ECS::Service')[1].Properties.NetworkConfiguration.AwsvpcConfiguration.SecurityGroups[0]['Fn::GetAtt'][0];
    const ingressTo = (groupId: string) => ofType('AWS::EC2::SecurityGroupIngress').filter(([, rule]) => rule.Properties.GroupId['Fn::GetAtt']?.[0] === groupId);

    expect(loadBalancerGroup.Properties.SecurityGroupIngress).toEqual([{ CidrIp: '0.0.0.0/0', Description: 'Twilio Media Streams (wss)', FromPort: 443, IpProtocol: 'tcp', ToPort: 443 }]);
    expect(resources[taskGroupId]?.Properties.SecurityGroupIngress).toBeUndefined();
    expect(ingressTo(taskGroupId).map(([, rule]) => rule.Properties)).toEqual([
      { Description: 'Load balancer to target', FromPort: 8080, GroupId: { 'Fn::GetAtt': [taskGroupId, 'GroupId'] }, IpProtocol: 'tcp', SourceSecurityGroupId: { 'Fn::GetAtt': [loadBalancerGroupId, 'GroupId'] }, ToPort: 8080 },
    ]);
    // Public subnets and no NAT gateway: nothing to pay for by the hour but the load balancer and the tasks.
    expect(ofType('AWS::EC2::NatGateway')).toEqual([]);
  });

  it("grants its task exactly the voice relay's turn grants, the speech services and the speech providers' keys, each named or held to the region, no action a wildcard", () => {
    const roleId = idOf(stack.mediaWorker?.taskRole as never);
    const statements = ofType('AWS::IAM::Policy')
      .filter(([, policy]) => JSON.stringify(policy.Properties.Roles).includes(`"${roleId}"`))
      .flatMap(([, policy]) => asArray(policy.Properties.PolicyDocument.Statement as Statement | Statement[]));
    const relayRoleId = resources[idOf(stack.functions.get('voice-relay') as never)]?.Properties.Role['Fn::GetAtt'][0];
    const relayStatements = ofType('AWS::IAM::Policy')
      .filter(([, policy]) => JSON.stringify(policy.Properties.Roles).includes(`"${relayRoleId}"`))
      .flatMap(([, policy]) => asArray(policy.Properties.PolicyDocument.Statement as Statement | Statement[]));
    // Each action on each resource (the policies merge statements differently), with its condition.
    const grants = (list: Statement[]) =>
      [...new Set(list.flatMap((statement) => asArray(statement.Action).flatMap((action) => asArray(statement.Resource).map((resource) => JSON.stringify([action, resource, statement.Condition])))))].sort();
    const speech = (statement: Statement) =>
      asArray(statement.Action).some((action) => action.startsWith('polly:') || action.startsWith('transcribe:') || action === 'bedrock:InvokeModelWithBidirectionalStream');
    // What the relay has as a Lambda function (its log group, X-Ray) or as ConversationRelay's (the management API).
    const lambdaOrRelay = (grant: string) => /^\["(logs|xray|execute-api):/.test(grant);

    for (const statement of statements) for (const action of asArray(statement.Action)) expect(action).not.toContain('*');
    expect(statements.filter(speech)).toEqual([
      {
        Action: ['polly:SynthesizeSpeech', 'transcribe:StartStreamTranscription', 'transcribe:StartStreamTranscriptionWebSocket'],
        Condition: { StringEquals: { 'aws:RequestedRegion': { Ref: 'AWS::Region' } } },
        Effect: 'Allow',
        Resource: '*',
      },
      // Nova Sonic, the one speech-to-speech model deploy/example.json names, and no other model.
      {
        Action: 'bedrock:InvokeModelWithBidirectionalStream',
        Effect: 'Allow',
        Resource: { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':bedrock:', { Ref: 'AWS::Region' }, '::foundation-model/amazon.nova-sonic-v1:0']] },
      },
    ]);
    // The relay's turn grants (the table, the models, rerank, knowledge, the secrets key and the secrets its settings
    // read), and not its management API; the deployment's keys of the speech providers (their secrets, read as the
    // relay reads its own); no recordings: the carrier's callback copies them, as for every call.
    const speechKey = (grant: string) => /"Ref":"Secret(DEEPGRAM|CARTESIA|RIME|ELEVENLABS)APIKEY"/.test(grant);
    expect(grants(statements.filter((statement) => !speech(statement))).filter((grant) => !speechKey(grant))).toEqual(grants(relayStatements).filter((grant) => !lambdaOrRelay(grant)));
    expect(grants(statements).filter(speechKey)).toEqual(
      ['CARTESIA', 'DEEPGRAM', 'ELEVENLABS', 'RIME'].flatMap((provider) => [`["secretsmanager:DescribeSecret",{"Ref":"Secret${provider}APIKEY"},null]`, `["secretsmanager:GetSecretValue",{"Ref":"Secret${provider}APIKEY"},null]`]).sort(),
    );
    expect(JSON.stringify(statements)).not.toContain('Recordings');
    expect(statements.filter((statement) => statement.Resource === '*').flatMap((statement) => asArray(statement.Action)).sort()).toEqual(
      ['bedrock:Rerank', 'polly:SynthesizeSpeech', 'transcribe:StartStreamTranscription', 'transcribe:StartStreamTranscriptionWebSocket'].sort(),
    );
  });

  it('gives its container exactly its declared settings, MEDIA_WORKER_URL among them, and the same address to every function that makes TwiML', () => {
    const url = `wss://${worker.domain.name}/media-stream`;
    const [, definition] = only('AWS::ECS::TaskDefinition');
    const environment = Object.fromEntries((definition.Properties.ContainerDefinitions[0].Environment as { Name: string; Value: unknown }[]).map(({ Name, Value }) => [Name, Value]));
    const declared = settingsOf('media-worker').filter((setting) => settingSources[setting] !== 'local' && settingSources[setting] !== 'lambda');
    // Besides its settings, what Lambda would set (the region) and the container's own (service name, port).
    const given = Object.keys(environment).filter((name) => !['AWS_REGION', 'POWERTOOLS_SERVICE_NAME', 'PORT'].includes(name));
    const variablesOf = (name: string) => resources[idOf(stack.functions.get(name) as never)]?.Properties.Environment.Variables as Record<string, unknown>;

    expect(environment.MEDIA_WORKER_URL).toBe(url);
    expect(environment.AWS_REGION).toEqual({ Ref: 'AWS::Region' });
    const settingOf = (name: string) => secretSettings.find((secret) => name === `${secret}_ARN`) ?? name;
    expect(given.map(settingOf).sort()).toEqual([...declared].sort());
    for (const name of Object.keys(functionSettings)) expect(variablesOf(name).MEDIA_WORKER_URL, name).toBe(settingsOf(name).includes('MEDIA_WORKER_URL') ? url : undefined);
    expect((Template.fromStack(stack).findOutputs('MediaWorkerUrl').MediaWorkerUrl as { Value: unknown }).Value).toBe(url);
  });
});

describe('a deployment without the media worker', () => {
  it('has no cluster, load balancer, VPC or worker address (the default)', () => {
    const app = new App({ context: { ...context, 'aws:cdk:bundling-stacks': [] }, outdir: join(outdir, 'default') });
    const bare = new AgentPlatformStack(app, 'Bare', { deployment: checkDeploymentConfig({}) });
    const template = JSON.stringify(Template.fromStack(bare).toJSON());

    expect(bare.mediaWorker).toBeUndefined();
    for (const type of ['AWS::ECS::Cluster', 'AWS::ECS::Service', 'AWS::ElasticLoadBalancingV2::LoadBalancer', 'AWS::EC2::VPC']) expect(template).not.toContain(`"${type}"`);
    expect(template).not.toContain('MEDIA_WORKER_URL');
  }, 300_000);
});

describe("the worker's image", () => {
  it('is built from the Dockerfile beside the worker and its esbuild bundle: Node 24 on bookworm, the speech engines, a user that is not root', () => {
    const app = new App({ outdir: join(outdir, 'image') });
    const service = new MediaWorkerService(new Stack(app, 'Image'), 'MediaWorker', {
      config: { ...checkDeploymentConfig({ mediaWorker: worker }).config.mediaWorker, domain: worker.domain },
      logRetention: logs.RetentionDays.ONE_MONTH,
    });
    const assets = JSON.parse(readFileSync(join(app.synth().directory, 'Image.assets.json'), 'utf8')) as { dockerImages: Record<string, { source: { directory: string } }> };
    const directory = join(outdir, 'image', Object.values(assets.dockerImages)[0]?.source.directory ?? '');
    const dockerfile = readFileSync(join(directory, 'Dockerfile'), 'utf8');

    expect(service.url).toBe(`wss://${worker.domain.name}/media-stream`);
    expect(existsSync(join(directory, 'bundle', 'index.mjs'))).toBe(true);
    expect(dockerfile).toMatch(/^FROM node:24-bookworm-slim$/m);
    expect(dockerfile).toMatch(/apt-get install .*espeak-ng pocketsphinx pocketsphinx-en-us/);
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/^COPY bundle\/ \.\/$/m);
    expect(dockerfile).toMatch(/^HEALTHCHECK /m);
    expect(dockerfile).toMatch(/^CMD \["node", "index\.mjs"\]$/m);
  }, 300_000);
});
