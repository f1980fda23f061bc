/**
 * `npm run smoke` against the local runtime started as `npm start` starts it, so the script a deployment is checked
 * with is known to pass before anyone deploys (docs/deploy.md#smoke-test); and what it reports and leaves behind
 * when a step fails.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../infra/local/free-port.ts';
import { call, childEnv, killGroup, spawnInGroup, startServer, stopEverything, tempDataDir, waitForExit, type RunningServer } from '../support/local-process.ts';

const initKey = `smoke_${randomBytes(24).toString('base64url')}`;
let server: RunningServer;
let webhookUrl: string;

const steps = [
  'health',
  'default model',
  'create agent',
  'open event stream',
  'open session',
  'chat, not streamed',
  'chat, streamed',
  'event on the event stream',
  'create webhook',
  'delete webhook',
  'list phone numbers',
];

beforeAll(async () => {
  const port = await freePort();
  // Registering a webhook resolves its host: a loopback URL, on a port opened to egress, needs no DNS.
  const receiverPort = await freePort();
  webhookUrl = `http://127.0.0.1:${receiverPort}/smoke`;
  const env = childEnv({
    DATA_DIR: tempDataDir(),
    PORT: String(port),
    HOST: '127.0.0.1',
    INIT_ORG_ID: 'smoke-org',
    INIT_API_KEY: initKey,
    LOOPBACK_EGRESS_PORTS: String(receiverPort),
  });
  server = await startServer(env, port, { viaNpm: true });
}, 120_000);

afterAll(stopEverything, 30_000);

/** `npm run smoke -- …` as a user types it, the key in SMOKE_API_KEY. */
async function runSmoke(key: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawnInGroup(['run', 'smoke', '--', '--base-url', server.baseUrl, '--webhook-url', webhookUrl], childEnv({ SMOKE_API_KEY: key }), 'npm');
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk) => (stdout += chunk));
  child.stderr?.on('data', (chunk) => (stderr += chunk));
  const closed = new Promise<void>((resolveClose) => child.once('close', () => resolveClose()));
  const exit = await waitForExit(child, 150_000);
  if (exit === 'timeout') {
    killGroup(child, 'SIGKILL');
    throw new Error(`npm run smoke did not finish within 150 s: ${stdout}${stderr}`);
  }
  await closed;
  return { code: exit.code, stdout, stderr };
}

/** The outcome printed for each step, by step name. */
function outcomes(stdout: string): Record<string, string> {
  const lines = stdout.split('\n').flatMap((line) => {
    const match = /^(ok|FAIL|skip) {2,}(\S.*?)(?: {2,}|$)/.exec(line);
    return match ? [[match[2] as string, match[1] as string]] : [];
  });
  return Object.fromEntries(lines);
}

describe('npm run smoke against npm start', () => {
  it('passes every step, one line each, exits 0 and leaves no agent behind', async () => {
    // Act
    const result = await runSmoke(initKey);

    // Assess
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(outcomes(result.stdout)).toEqual({
      ...Object.fromEntries(steps.map((step) => [step, 'ok'])),
      'cleanup: close session': 'ok',
      'cleanup: delete agent': 'ok',
    });
    expect(result.stdout).toMatch(/default model +\d+ ms {2}builtin\/builtin-assistant/);
    expect(result.stdout).toMatch(/chat, streamed +\d+ ms {2}\d+ deltas, "You said/);
    expect(result.stdout).toContain('Smoke test passed: 11 steps');
    // The key came from the environment: npm echoed the command, not the key.
    expect(result.stdout + result.stderr).not.toContain(initKey);
    expect((await call(server, 'GET', '/v1/chat/agents', { key: initKey })).body.data).toEqual([]);
    expect((await call(server, 'GET', '/v1/chat/webhooks', { key: initKey })).body.data).toEqual([]);
    const sessions = await call(server, 'GET', '/v1/chat/chat/sessions', { key: initKey });
    expect(sessions.body.data.map((session: { state: string }) => session.state)).toEqual(['CLOSED']);
  }, 180_000);

  it('stops at a failed step, says which, skips the rest, still cleans up, and exits 1', async () => {
    // Prepare: a key that may do everything but register webhooks.
    const issued = await call(server, 'POST', '/v1/chat/api-keys', {
      key: initKey,
      body: { name: 'smoke without webhooks', scopes: ['agents:write', 'models:read', 'chat:write', 'voice:read'] },
    });
    expect(issued.status).toBe(201);
    const listed = await call(server, 'GET', '/v1/chat/chat/sessions', { key: initKey });
    expect(listed.status, listed.text).toBe(200);
    const sessionsBefore = listed.body.data.length;

    // Act
    const result = await runSmoke(issued.body.key);

    // Assess
    expect(result.code).toBe(1);
    // The whole output as the message: a step that failed for another reason says why.
    expect(outcomes(result.stdout), result.stdout).toMatchObject({
      'create webhook': 'FAIL',
      'delete webhook': 'skip',
      'list phone numbers': 'skip',
      'chat, streamed': 'ok',
      'cleanup: close session': 'ok',
      'cleanup: delete agent': 'ok',
    });
    expect(result.stdout).toMatch(/FAIL +create webhook +\d+ ms {2}403 FORBIDDEN: .*webhooks:write/);
    expect(result.stdout).toContain('Smoke test FAILED');
    expect((await call(server, 'GET', '/v1/chat/agents', { key: initKey })).body.data).toEqual([]);
    const sessions = (await call(server, 'GET', '/v1/chat/chat/sessions', { key: initKey })).body.data as { state: string }[];
    expect(sessions).toHaveLength(sessionsBefore + 1);
    expect(sessions.every((session) => session.state === 'CLOSED')).toBe(true);
  }, 180_000);

  it('refuses to start without a base URL or a key (exit 2, the usage on stderr)', async () => {
    // Act
    const child = spawnInGroup(['infra/smoke.ts', '--base-url', server.baseUrl], childEnv({ SMOKE_API_KEY: '' }));
    let stderr = '';
    child.stderr?.on('data', (chunk) => (stderr += chunk));
    const exit = await waitForExit(child, 60_000);

    // Assess
    expect(exit).toMatchObject({ code: 2 });
    expect(stderr).toContain('An API key is required: --key, or SMOKE_API_KEY in the environment.');
    expect(stderr).toContain('Usage: npm run smoke');
  }, 90_000);
});
