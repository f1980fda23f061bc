import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ecsTaskProtection } from '../../services/media-worker/ecs-task-protection.ts';

/** A local double of the ECS agent's task-protection endpoint: it records each request and answers as the agent does. */
class AgentDouble {
  readonly requests: { method: string; path: string; body: unknown }[] = [];
  answer: (body: { ProtectionEnabled: boolean; ExpiresInMinutes?: number }) => { status: number; body: unknown } = (body) => ({
    status: 200,
    body: { protection: { ProtectionEnabled: body.ProtectionEnabled, ExpirationDate: '2026-11-26T22:00:00Z', TaskArn: 'arn:aws:ecs:us-east-1:111122223333:task/media/abc' } },
  });
  private server: Server | undefined;

  async start(): Promise<string> {
    this.server = createServer(async (request, response) => {
      const body = JSON.parse(await text(request)) as { ProtectionEnabled: boolean; ExpiresInMinutes?: number };
      this.requests.push({ method: request.method ?? '', path: request.url ?? '', body });
      const { status, body: answer } = this.answer(body);
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server?.address() as AddressInfo).port}/api/task-id`;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

async function text(request: IncomingMessage): Promise<string> {
  let body = '';
  for await (const chunk of request) body += String(chunk);
  return body;
}

describe('ecsTaskProtection', () => {
  let agent: AgentDouble;
  let agentUri: string;
  let clock: number;
  const now = () => clock;

  beforeEach(async () => {
    agent = new AgentDouble();
    agentUri = await agent.start();
    clock = 1_000_000;
  });
  afterEach(() => agent.stop());

  it('protects the task at its first call, with the expiry asked for, and releases it when the last call ends', async () => {
    const protection = ecsTaskProtection({ agentUri, expiresInMinutes: 30, now });

    await protection.update(1);
    await protection.update(2);
    await protection.update(0);

    expect(agent.requests).toEqual([
      { method: 'PUT', path: '/api/task-id/task-protection/v1/state', body: { ProtectionEnabled: true, ExpiresInMinutes: 30 } },
      { method: 'PUT', path: '/api/task-id/task-protection/v1/state', body: { ProtectionEnabled: false } },
    ]);
  });

  it('asks nothing of an idle task that was never protected', async () => {
    const protection = ecsTaskProtection({ agentUri, now });

    await protection.update(0);
    await protection.update(0);

    expect(agent.requests).toEqual([]);
  });

  it('renews the protection once half of it has passed with calls still on', async () => {
    const protection = ecsTaskProtection({ agentUri, expiresInMinutes: 60, now });

    await protection.update(3);
    clock += 29 * 60_000;
    await protection.update(3);
    clock += 2 * 60_000;
    await protection.update(3);

    expect(agent.requests.map((request) => request.body)).toEqual([
      { ProtectionEnabled: true, ExpiresInMinutes: 60 },
      { ProtectionEnabled: true, ExpiresInMinutes: 60 },
    ]);
  });

  it('asks again at the next update when the agent refused, whether by its failure, its error or its status', async () => {
    const answers = [
      { status: 200, body: { failure: { Arn: 'arn:aws:ecs:us-east-1:111122223333:task/media/abc', Reason: 'TASK_NOT_VALID', Detail: 'not part of a service' } } },
      { status: 400, body: { error: { Code: 'InvalidParameterException', Message: 'ExpiresInMinutes out of range' } } },
      { status: 500, body: {} },
    ];
    const defaultAnswer = agent.answer;
    agent.answer = (body) => answers.shift() ?? defaultAnswer(body);
    const protection = ecsTaskProtection({ agentUri, now });

    for (let attempt = 0; attempt < 4; attempt += 1) await protection.update(1);
    await protection.update(1);

    expect(agent.requests).toHaveLength(4);
    expect(agent.requests.every((request) => (request.body as { ProtectionEnabled: boolean }).ProtectionEnabled)).toBe(true);
  });

  it('sends the updates one after another, each with its own count, when they come at once', async () => {
    const protection = ecsTaskProtection({ agentUri, now });

    await Promise.all([protection.update(1), protection.update(0), protection.update(1)]);

    expect(agent.requests.map((request) => (request.body as { ProtectionEnabled: boolean }).ProtectionEnabled)).toEqual([true, false, true]);
  });

  it('does nothing off ECS, where no agent address is given', async () => {
    let fetched = false;
    const protection = ecsTaskProtection({ agentUri: undefined, fetch: () => Promise.reject(new Error((fetched = true) && 'no agent')) });

    await protection.update(5);

    expect(fetched).toBe(false);
  });
});
