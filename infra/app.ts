import { App } from 'aws-cdk-lib';
import { AgentPlatformStack } from './stack.ts';

const app = new App();
// No `env`: the stack is environment-agnostic and does no lookups, so synth needs neither credentials nor network.
new AgentPlatformStack(app, 'AgentPlatformStack', {
  description:
    'Agent platform API: CloudFront in front of an API Gateway HTTP API and a streaming REST API, one Lambda function per route group, one DynamoDB table',
});
