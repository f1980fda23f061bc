import { App, Aspects } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { checkDeploymentConfig, DeploymentConfigError, loadDeploymentConfig, type Deployment } from './deployment-config.ts';
import { AgentPlatformStack } from './stack.ts';

const app = new App();
// No `env`: the stack is environment-agnostic and does no lookups, so synth needs neither credentials nor network.
// Everything that differs between deployments is in one file: `cdk deploy -c config=deploy/production.json`.
const option = (name: string): string | undefined => (app.node.tryGetContext(name) as string | undefined) || undefined;

/** The options of the command line before the configuration file; they moved into it. */
const movedOptions = { domainName: 'domain.name', certificateArn: 'domain.certificateArn', webAclArn: 'webAclArn' };

function deployment(): Deployment {
  for (const [name, key] of Object.entries(movedOptions)) {
    if (option(name)) throw new DeploymentConfigError(`-c ${name} is now "${key}" in the deployment configuration file: npx cdk deploy -c config=deploy/<file>.json (docs/deploy.md)`);
  }
  const file = option('config');
  if (file) return loadDeploymentConfig(file);
  console.warn('No deployment configuration (-c config=deploy/<file>.json): synthesizing with the defaults, the built-in models only and API keys only (docs/deploy.md).');
  return checkDeploymentConfig({});
}

try {
  new AgentPlatformStack(app, 'AgentPlatformStack', {
    description:
      'Agent platform API: CloudFront in front of an API Gateway HTTP API and a streaming REST API, one Lambda function per route group, one DynamoDB table',
    deployment: deployment(),
  });
} catch (error) {
  if (!(error instanceof DeploymentConfigError)) throw error;
  // The message names each bad key; a stack trace would only bury it.
  console.error(error.message);
  process.exit(1);
}
// A finding that is neither fixed nor suppressed with its reason fails the synth (and test/infra/nag.test.ts).
Aspects.of(app).add(new AwsSolutionsChecks({ reports: false }));
