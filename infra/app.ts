import { App, Aspects } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { AgentPlatformStack } from './stack.ts';

const app = new App();
// No `env`: the stack is environment-agnostic and does no lookups, so synth needs neither credentials nor network.
// Options come from context: `cdk deploy -c domainName=api.example.com -c certificateArn=arn:… -c webAclArn=arn:…`.
const option = (name: string): string | undefined => (app.node.tryGetContext(name) as string | undefined) || undefined;
new AgentPlatformStack(app, 'AgentPlatformStack', {
  description:
    'Agent platform API: CloudFront in front of an API Gateway HTTP API and a streaming REST API, one Lambda function per route group, one DynamoDB table',
  domainName: option('domainName'),
  certificateArn: option('certificateArn'),
  webAclArn: option('webAclArn'),
});
// A finding that is neither fixed nor suppressed with its reason fails the synth (and test/infra/nag.test.ts).
Aspects.of(app).add(new AwsSolutionsChecks({ reports: false }));
