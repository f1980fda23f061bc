/**
 * cdk-nag's AWS Solutions pack over the stack: every finding is either fixed or suppressed in the stack with its
 * evidence (docs/security.md#cdk-nag). A new resource that breaks a rule fails here, and at `cdk synth`.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Aspects } from 'aws-cdk-lib';
import { AwsSolutionsChecks, type INagLogger, type NagLoggerErrorData, type NagLoggerNonComplianceData, type NagLoggerSuppressedData } from 'cdk-nag';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkDeploymentConfig, loadDeploymentConfig } from '../../infra/deployment-config.ts';
import { AgentPlatformStack, type AgentPlatformStackProps } from '../../infra/stack.ts';

/** What the pack reports, one line a finding: rule, construct path and (for IAM5 and the like) the finding's detail. */
class CollectingLogger implements INagLogger {
  readonly unsuppressed: string[] = [];
  readonly suppressed: { finding: string; reason: string }[] = [];
  onNonCompliance(data: NagLoggerNonComplianceData): void {
    this.unsuppressed.push(findingOf(data));
  }
  onSuppressed(data: NagLoggerSuppressedData): void {
    this.suppressed.push({ finding: findingOf(data), reason: data.suppressionReason });
  }
  onError(data: NagLoggerErrorData): void {
    this.unsuppressed.push(`${data.ruleId} ${data.resource.node.path}: the rule failed: ${data.errorMessage}`);
  }
  onCompliance(): void {}
  onSuppressedError(): void {}
  onNotApplicable(): void {}
}

const findingOf = (data: NagLoggerNonComplianceData) => `${data.ruleId} ${data.resource.node.path}${data.findingId ? ` [${data.findingId}]` : ''}`;
const outdir = mkdtempSync(join(tmpdir(), 'nag-test-'));
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

function check(props: AgentPlatformStackProps = {}): CollectingLogger {
  const { context } = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')) as { context: Record<string, unknown> };
  // The rules read the template, not the bundles: skip bundling.
  const app = new App({ context: { ...context, 'aws:cdk:bundling-stacks': [] }, outdir });
  new AgentPlatformStack(app, 'Nag', props);
  const logger = new CollectingLogger();
  Aspects.of(app).add(new AwsSolutionsChecks({ additionalLoggers: [logger], reports: false }));
  app.synth();
  return logger;
}

describe('cdk-nag AWS Solutions checks', () => {
  let nag: CollectingLogger;
  beforeAll(() => {
    nag = check();
  }, 120_000);

  it('leaves no finding unfixed or unsuppressed', () => {
    expect(nag.unsuppressed).toEqual([]);
  });

  it('gives every suppression a reason with its evidence', () => {
    expect(nag.suppressed.length).toBeGreaterThan(0);
    for (const { finding, reason } of nag.suppressed) expect(reason.length, finding).toBeGreaterThanOrEqual(60);
  });

  it('suppresses the TLS and WAF findings of CloudFront only while no domain, certificate or web ACL is given', () => {
    const rules = (logger: CollectingLogger) => new Set(logger.suppressed.map(({ finding }) => finding.split(' ')[0]));
    expect([...rules(nag)]).toEqual(expect.arrayContaining(['AwsSolutions-CFR4', 'AwsSolutions-CFR2']));

    const hardened = check({
      deployment: checkDeploymentConfig({
        domain: { name: 'api.example.com', certificateArn: 'arn:aws:acm:us-east-1:123456789012:certificate/11111111-2222-3333-4444-555555555555' },
        webAclArn: 'arn:aws:wafv2:us-east-1:123456789012:global/webacl/agent-platform/11111111-2222-3333-4444-555555555555',
      }),
    });

    expect(hardened.unsuppressed).toEqual([]);
    expect([...rules(hardened)]).not.toContain('AwsSolutions-CFR4');
    expect([...rules(hardened)]).not.toContain('AwsSolutions-CFR2');
  }, 120_000);

  it('leaves no finding with every key of deploy/example.json set (Bedrock models named, secrets made and referenced)', () => {
    const deployment = loadDeploymentConfig('deploy/example.json');
    const example = check({ deployment });

    expect(example.unsuppressed).toEqual([]);
    for (const { finding, reason } of example.suppressed) expect(reason.length, finding).toBeGreaterThanOrEqual(60);
    // The secrets the stack makes cannot rotate themselves (third-party keys); that is the one new finding, suppressed, once a secret.
    const made = Object.values(deployment.secrets).filter((source) => source === 'create').length;
    expect(made).toBeGreaterThan(0);
    expect(example.suppressed.map(({ finding }) => finding).filter((finding) => finding.startsWith('AwsSolutions-SMG4'))).toHaveLength(made);
  }, 120_000);
});
