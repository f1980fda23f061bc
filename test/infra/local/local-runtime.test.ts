/**
 * The local runtime as a user runs it: `node infra/local/main.ts` and the command-line tools
 * (`infra/local/keys-cli.ts`, `call-cli.ts`) in child processes, each on a temporary DATA_DIR with its own persisted
 * DynamoDB Local.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../infra/local/free-port.ts';
import { BuiltinTextToSpeech } from '../../../shared/speech/builtin-tts.ts';
import { muLawDecode, readWav, writeWav } from '../../../shared/speech/telephone-audio.ts';
import {
  call,
  childEnv,
  isRunning,
  killGroup,
  repoRoot,
  spawnInGroup,
  startServer,
  stopEverything,
  stopServer,
  tempDataDir,
  waitForExit,
  waitForDynamoDbLocalToEnd,
  waitForGroupToEnd,
  type RunningServer,
} from '../../support/local-process.ts';

const keysScript = join(repoRoot, 'infra', 'local', 'keys-cli.ts');
const callScript = join(repoRoot, 'infra', 'local', 'call-cli.ts');

const agentBody = { fullName: 'Persistent Agent', description: 'survives restarts', role: 'You are helpful.' };

/** A key one character away from `key`, so it can never equal it by chance. */
function withLastCharacterChanged(key: string): string {
  return `${key.slice(0, -1)}${key.endsWith('x') ? 'y' : 'x'}`;
}

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

async function runKeysCli(args: string[], env: NodeJS.ProcessEnv, cwd?: string): Promise<CliResult> {
  const child = spawnInGroup([keysScript, ...args], env, process.execPath, cwd ? { cwd } : {});
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk) => (stdout += chunk));
  child.stderr?.on('data', (chunk) => (stderr += chunk));
  const closed = new Promise<void>((resolveClose) => child.once('close', () => resolveClose()));
  const exit = await waitForExit(child, 60_000);
  if (exit === 'timeout') {
    killGroup(child, 'SIGKILL');
    throw new Error(`keys CLI did not finish within 60 s; stderr: ${stderr}`);
  }
  await closed;
  return { code: exit.code, stdout, stderr };
}

/**
 * Talks through `npm run call` as a user would: waits to be connected, says `line`, waits for the agent's answer to
 * it, then hangs up with an empty line.
 */
async function talkThroughCallCli(args: string[], env: NodeJS.ProcessEnv, line: string): Promise<{ exit: Awaited<ReturnType<typeof waitForExit>>; stdout: string; stderr: string }> {
  const child = spawnInGroup([callScript, ...args], env, process.execPath, { stdin: 'pipe' });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk) => (stdout += chunk));
  child.stderr?.on('data', (chunk) => (stderr += chunk));
  const until = async (done: () => boolean, what: string) => {
    const deadline = Date.now() + 60_000;
    while (!done()) {
      if (!isRunning(child) || Date.now() > deadline) throw new Error(`call CLI: no ${what}; stdout: ${stdout} stderr: ${stderr}`);
      await new Promise((resolveWait) => setTimeout(resolveWait, 50));
    }
  };
  await until(() => stdout.includes('Connected.'), 'connection');
  child.stdin?.write(`${line}\n`);
  await until(() => stdout.includes(`agent> You said: "${line}"`), 'answer');
  child.stdin?.end('\n');
  return { exit: await waitForExit(child, 30_000), stdout, stderr };
}

afterAll(stopEverything, 30_000);

describe('headless start with INIT_ORG_ID and INIT_API_KEY', () => {
  let dataDir: string;
  let secretsKey: string;
  let port: number;
  let env: NodeJS.ProcessEnv;
  const initKey = randomBytes(30).toString('base64url');
  let cliKey: string;
  let agentId: string;
  let server: RunningServer | undefined;

  beforeAll(async () => {
    dataDir = tempDataDir();
    port = await freePort();
    // DEBUG, and a campaign tick every second, to see what an idle instance logs at which level.
    env = childEnv({ DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', INIT_ORG_ID: 'acme', INIT_API_KEY: initKey, POWERTOOLS_LOG_LEVEL: 'DEBUG', CAMPAIGN_TICK_SECONDS: '1' });
  });

  afterAll(async () => {
    if (server && isRunning(server.child)) await stopServer(server);
  }, 30_000);

  it('keys CLI with nothing running fails clearly (exit 1), naming the DATA_DIR it looked at and --offline, and writes nothing', async () => {
    // Act
    const result = await runKeysCli(['create', '--org', 'acme', '--name', 'stray', '--scopes', 'agents:read'], childEnv({ DATA_DIR: dataDir }));

    // Assess: no key is made where no server reads it (the next tests list the organization's keys).
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(`No npm start is running on DATA_DIR ${dataDir}`);
    expect(result.stderr).toContain('--offline');
    expect(result.stderr).not.toMatch(/\n\s+at /);
  }, 90_000);

  it('keys CLI --offline with nothing running writes to DATA_DIR\'s database, says so, prints exactly one JSON line and exits 0', async () => {
    // Prepare
    expect(initKey).toHaveLength(40);
    const cliEnv = childEnv({ DATA_DIR: dataDir });

    // Act
    const result = await runKeysCli(['create', '--org', 'acme', '--name', 'ci', '--scopes', 'agents:read', '--offline'], cliEnv);

    // Assess
    expect(result.stderr.trim()).toBe(`No npm start is running on DATA_DIR ${dataDir}: writing to its database directly (--offline).`);
    expect(result.code).toBe(0);
    expect(result.stdout.endsWith('\n')).toBe(true);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    const printed = JSON.parse(lines[0] as string);
    expect(Object.keys(printed).sort()).toEqual(['id', 'key', 'name', 'orgId', 'scopes']);
    expect(printed).toEqual({ id: expect.any(String), orgId: 'acme', name: 'ci', scopes: ['agents:read'], key: expect.stringMatching(/^apk_[A-Za-z0-9_-]{32,}$/) });
    expect(existsSync(join(dataDir, 'running.json'))).toBe(false);
    cliKey = printed.key;
  }, 90_000);

  it('serves the API with INIT_API_KEY holding every scope, and the key made before the start', async () => {
    // Act
    server = await startServer(env, port);

    // Assess: the start-up hint is the whole command, DATA_DIR included, so that the keys CLI finds this instance.
    expect(server.output().stdout).toContain('acme');
    expect(server.output().stdout).toContain(`More keys: DATA_DIR=${dataDir} npm run --silent keys -- create --org acme --name NAME --scopes '*'`);
    expect(server.output().stdout).toContain(`Call one of your numbers as a caller: DATA_DIR=${dataDir} npm run call -- --inbound <number, as +1…>`);
    const listed = await call(server, 'GET', '/v1/chat/agents', { key: initKey });
    expect(listed.status).toBe(200);
    expect(listed.body.data).toEqual([]);
    const created = await call(server, 'POST', '/v2/chat/agents', { key: initKey, body: agentBody });
    expect(created.status).toBe(201);
    expect(created.body.orgId).toBe('acme');
    agentId = created.body.id;
    const keys = await call(server, 'GET', '/v1/chat/api-keys', { key: initKey });
    expect(keys.status).toBe(200);
    expect(keys.body.data.map((item: { name: string }) => item.name).sort()).toEqual(['ci', 'init']);
    expect(keys.text).not.toContain(initKey);

    const viaCliKey = await call(server, 'GET', '/v1/chat/agents', { key: cliKey });
    expect(viaCliKey.status).toBe(200);
    expect(viaCliKey.body.data.map((agent: { id: string }) => agent.id)).toEqual([agentId]);
    expect((await call(server, 'POST', '/v2/chat/agents', { key: cliKey, body: agentBody })).status).toBe(403);
    expect((await call(server, 'GET', '/v1/chat/agents', { key: withLastCharacterChanged(initKey) })).status).toBe(401);
    // The key that seals this DATA_DIR's secrets at rest, readable by its owner only.
    expect(statSync(join(dataDir, 'secrets.key')).mode & 0o777).toBe(0o600);
    secretsKey = readFileSync(join(dataDir, 'secrets.key'), 'utf8');
  }, 120_000);

  it('keys CLI while the server runs issues a key the server accepts at once', async () => {
    // Prepare
    expect(server && isRunning(server.child)).toBe(true);
    const running = server as RunningServer;

    // Act
    const result = await runKeysCli(
      ['create', '--org', 'acme', '--name', 'deploy', '--scopes', 'agents:read,agents:write'],
      childEnv({ DATA_DIR: dataDir }),
    );

    // Assess
    expect(result.code).toBe(0);
    expect(result.stderr.trim()).toBe(`Using the npm start running on http://127.0.0.1:${port} (DATA_DIR ${dataDir}, pid ${running.child.pid}).`);
    expect(result.stdout.trimEnd().split('\n')).toHaveLength(1);
    const printed = JSON.parse(result.stdout);
    expect(printed).toMatchObject({ orgId: 'acme', name: 'deploy', scopes: ['agents:read', 'agents:write'] });
    const listed = await call(running, 'GET', '/v1/chat/agents', { key: printed.key });
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((agent: { id: string }) => agent.id)).toEqual([agentId]);
    expect(isRunning(running.child)).toBe(true);
  }, 90_000);

  it('keys CLI run elsewhere without the DATA_DIR of the running npm start fails clearly and makes no key anywhere', async () => {
    // Prepare: another directory, whose default .data no npm start uses (the user forgot DATA_DIR).
    expect(server && isRunning(server.child)).toBe(true);
    const elsewhere = mkdtempSync(join(tmpdir(), 'agent-platform-cwd-'));
    const keysBefore = (await call(server as RunningServer, 'GET', '/v1/chat/api-keys', { key: initKey })).body.pagination.total;

    try {
      // Act
      const result = await runKeysCli(['create', '--org', 'acme', '--name', 'lost', '--scopes', 'agents:read'], childEnv({}), elsewhere);

      // Assess
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toContain(`No npm start is running on DATA_DIR ${join(elsewhere, '.data')}`);
      expect(existsSync(join(elsewhere, '.data'))).toBe(false);
      expect((await call(server as RunningServer, 'GET', '/v1/chat/api-keys', { key: initKey })).body.pagination.total).toBe(keysBefore);
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
    }
  }, 60_000);

  it('call CLI finds the API and the Twilio simulator through DATA_DIR (no PORT, no --api) and takes the key from AGENT_PLATFORM_API_KEY', async () => {
    // Prepare: a voice agent and a number of the organization, as README's call example.
    const running = server as RunningServer;
    const twilio = await call(running, 'PUT', '/v1/chat/telephony/twilio', { key: initKey, body: { accountSid: `AC${randomBytes(16).toString('hex')}`, authToken: randomBytes(16).toString('hex') } });
    expect(twilio.status, twilio.text).toBe(200);
    const agent = await call(running, 'POST', '/v2/chat/agents', { key: initKey, body: { fullName: 'Vox', description: 'Phone', role: 'You answer the phone.', voiceEnabled: true, voicePipelineMode: 'pipeline' } });
    expect(agent.status, agent.text).toBe(201);
    // Bought from the instance's Twilio simulator, as README's call example does (an import needs a number at Twilio).
    const number = await call(running, 'POST', '/api/v1/phone-numbers/buy', { key: initKey, body: { area_code: '415' } });
    expect(number.status, number.text).toBe(201);

    // Act: the user says one line, waits for the agent's answer, then hangs up with an empty line.
    const { exit, stdout, stderr } = await talkThroughCallCli(
      ['--from', number.body.id, '--to', '+15550100', '--agent', agent.body.id],
      childEnv({ DATA_DIR: dataDir, AGENT_PLATFORM_API_KEY: initKey }),
      'Hello there',
    );

    // Assess
    expect(exit, stderr).toEqual({ code: 0, signal: null });
    expect(stderr).toContain(`Using the npm start running on http://127.0.0.1:${port} (DATA_DIR ${dataDir}, pid ${running.child.pid}).`);
    const sessionId = /Calling \+15550100: session ([0-9a-f-]{36})/.exec(stdout)?.[1];
    expect(sessionId, stdout).toBeDefined();
    const messages = await call(running, 'GET', `/api/v1/chat/sessions/${sessionId}/messages`, { key: initKey });
    expect(messages.status, messages.text).toBe(200);
    expect(messages.body.data.map((message: { content: string }) => message.content)).toContain('Hello there');
  }, 120_000);

  it('call CLI --inbound calls a number of the organization as a caller, without a key, and the number\'s agent answers', async () => {
    // Prepare: a number routed to a voice agent (the organization has Twilio credentials from the test above).
    const running = server as RunningServer;
    const agent = await call(running, 'POST', '/v2/chat/agents', { key: initKey, body: { fullName: 'Reception', description: 'Phone', role: 'You answer the phone.', voiceEnabled: true, voicePipelineMode: 'pipeline' } });
    expect(agent.status, agent.text).toBe(201);
    const number = await call(running, 'POST', '/api/v1/phone-numbers/buy', { key: initKey, body: { area_code: '415', agentId: agent.body.id } });
    expect(number.status, number.text).toBe(201);

    // Act: dialled as a caller would, with no key in the environment.
    const { exit, stdout, stderr } = await talkThroughCallCli(['--inbound', number.body.phone_number, '--caller', '+15550123'], childEnv({ DATA_DIR: dataDir }), 'Is the shop open?');

    // Assess
    expect(exit, stderr).toEqual({ code: 0, signal: null });
    expect(stdout).toContain(`Calling ${number.body.phone_number} from +15550123`);
    const callSid = /Call (CA[0-9a-f]{32})/.exec(stdout)?.[1];
    expect(callSid, stdout).toBeDefined();
    const sessions = await call(running, 'GET', '/v1/chat/chat/sessions?platform=PHONE&limit=100', { key: initKey });
    const session = sessions.body.data.find((candidate: { metadata: { roomName?: string } }) => candidate.metadata.roomName === callSid);
    expect(session, sessions.text).toMatchObject({ agentId: agent.body.id, direction: 'INBOUND', metadata: { customerPhoneNumber: '+15550123' } });
    const messages = await call(running, 'GET', `/api/v1/chat/sessions/${session.id}/messages`, { key: initKey });
    expect(messages.body.data.map((message: { content: string }) => message.content)).toContain('Is the shop open?');
  }, 120_000);

  it('call CLI --play says a WAV file on a call through the media worker, and --save keeps what the agent said', async () => {
    // Prepare: an agent with a built-in voice (its calls go through the media worker, npm start's own process) and a
    // recording of the caller's question, as a person would bring one: a PCM WAV file.
    const running = server as RunningServer;
    const agent = await call(running, 'POST', '/v2/chat/agents', {
      key: initKey,
      body: { fullName: 'Speaker', description: 'Phone', role: 'You answer the phone.', voiceEnabled: true, voicePipelineMode: 'pipeline', voice: { provider: 'builtin', voiceId: 'en-us' } },
    });
    expect(agent.status, agent.text).toBe(201);
    const number = await call(running, 'POST', '/api/v1/phone-numbers/buy', { key: initKey, body: { area_code: '415', agentId: agent.body.id } });
    expect(number.status, number.text).toBe(201);
    const files = mkdtempSync(join(tmpdir(), 'call-audio-'));
    const question = join(files, 'question.wav');
    const answer = join(files, 'answer.wav');
    const chunks: Uint8Array[] = [];
    for await (const chunk of new BuiltinTextToSpeech().synthesize('Tell me the weather please.', { voiceId: 'en-us', language: 'en-US' })) chunks.push(chunk);
    writeFileSync(question, writeWav(muLawDecode(Buffer.concat(chunks)), 8_000));

    // Act: the file is said once connected; the call is hung up once the agent's reply was heard.
    const child = spawnInGroup([callScript, '--inbound', number.body.phone_number, '--play', question, '--save', answer], childEnv({ DATA_DIR: dataDir }), process.execPath, { stdin: 'pipe' });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk) => (stdout += chunk));
    child.stderr?.on('data', (chunk) => (stderr += chunk));
    const deadline = Date.now() + 90_000;
    while (!/agent> \S/.test(stdout)) {
      if (!isRunning(child) || Date.now() > deadline) throw new Error(`call CLI: no reply heard; stdout: ${stdout} stderr: ${stderr}`);
      await new Promise((resolveWait) => setTimeout(resolveWait, 50));
    }
    child.stdin?.end('\n');
    const exit = await waitForExit(child, 30_000);

    // Assess: the agent heard the file's words and answered aloud; what it said is in the file, seconds of it.
    expect(exit, stderr).toEqual({ code: 0, signal: null });
    expect(stdout).toContain(`The agent's audio`);
    const saved = readWav(readFileSync(answer));
    expect(saved.sampleRate).toBe(8_000);
    expect(saved.samples.length / saved.sampleRate).toBeGreaterThan(1);
    const callSid = /Call (CA[0-9a-f]{32})/.exec(stdout)?.[1];
    const sessions = await call(running, 'GET', '/v1/chat/chat/sessions?platform=PHONE&limit=100', { key: initKey });
    const session = sessions.body.data.find((candidate: { metadata: { roomName?: string } }) => candidate.metadata.roomName === callSid);
    const messages = await call(running, 'GET', `/api/v1/chat/sessions/${session.id}/messages`, { key: initKey });
    expect(messages.body.data[0]).toMatchObject({ role: 'USER', content: expect.stringContaining('weather'), metadata: { source: 'voice' } });
    rmSync(files, { recursive: true, force: true });
  }, 180_000);

  it('sends no campaign tick while no campaign is scheduled or running: nothing about them in the log, even at DEBUG', async () => {
    // Prepare: an organization without campaigns, and a server that has run through the tests before this one, many
    // times CAMPAIGN_TICK_SECONDS (1 s here); it ticked, and logged each tick, every second.
    const running = server as RunningServer;
    await call(running, 'GET', '/health');

    // Assess: the ticker looks for a campaign to dispatch (test/infra/local/idle-pollers.test.ts counts that), and
    // with none it sends nothing, so the dispatcher never runs.
    expect(running.output().stdout).not.toContain('"message":"campaign tick"');
  });

  it('keys CLI subscription set (the manual billing provider) changes the subscription the server answers with', async () => {
    // Prepare
    expect(server && isRunning(server.child)).toBe(true);
    const running = server as RunningServer;

    // Act
    const result = await runKeysCli(['subscription', 'set', '--org', 'acme', '--status', 'past_due', '--plan', 'pro'], childEnv({ DATA_DIR: dataDir }));
    const refused = await runKeysCli(['subscription', 'set', '--org', 'acme', '--status', 'frozen'], childEnv({ DATA_DIR: dataDir }));

    // Assess
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ status: 'past_due', currentPlan: 'pro' });
    const shown = await call(running, 'GET', '/v1/chat/subscription', { key: initKey });
    expect(shown.body).toMatchObject({ status: 'past_due', currentPlan: 'pro' });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/--status must be one of active, past_due, canceled, paused/);
  }, 60_000);

  it.each([
    ['no arguments', []],
    ['an unknown command', ['delete', '--org', 'acme', '--name', 'ci', '--scopes', 'agents:read']],
    ['a missing --name and --scopes', ['create', '--org', 'acme']],
    ['a missing option value', ['create', '--org', 'acme', '--name', 'ci', '--scopes']],
    ['an unknown option', ['create', '--org', 'acme', '--name', 'ci', '--scopes', 'agents:read', '--bogus', '1']],
  ])('keys CLI with %s exits non-zero with the usage on stderr and nothing on stdout', async (_label, args) => {
    // Act
    const result = await runKeysCli(args, childEnv({ DATA_DIR: dataDir }));

    // Assess
    expect(result.code).not.toBe(0);
    expect(result.code).not.toBeNull();
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/usage: .*create --org ID --name NAME --scopes/);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  }, 30_000);

  it('keys CLI refuses an unknown scope and a bad org id without printing a key', async () => {
    // Act
    const badScope = await runKeysCli(['create', '--org', 'acme', '--name', 'x', '--scopes', 'agents:read,root'], childEnv({ DATA_DIR: dataDir }));
    const badOrg = await runKeysCli(['create', '--org', 'a c/me', '--name', 'x', '--scopes', 'agents:read'], childEnv({ DATA_DIR: dataDir }));

    // Assess
    for (const result of [badScope, badOrg]) {
      expect(result.code).not.toBe(0);
      expect(result.stdout).toBe('');
      expect(result.stderr.length).toBeGreaterThan(0);
      expect(result.stderr).not.toMatch(/\n\s+at /);
    }
    expect(badScope.stderr).toContain('scopes');
    expect(badOrg.stderr).toContain('--org');
    const keys = await call(server as RunningServer, 'GET', '/v1/chat/api-keys', { key: initKey });
    expect(keys.body.pagination.total).toBe(3);
  }, 30_000);

  it('stops with exit code 0 within 10 s on SIGTERM, DynamoDB Local included', async () => {
    // Prepare
    const running = server as RunningServer;

    // Act
    const exit = await stopServer(running);

    // Assess
    expect(exit).toEqual({ code: 0, signal: null });
    expect(await waitForGroupToEnd(running.child, 5_000)).toBe(true);
    expect(await waitForDynamoDbLocalToEnd(dataDir, 5_000)).toBe(true);
    expect(existsSync(join(dataDir, 'running.json'))).toBe(false);
    await expect(fetch(`${running.baseUrl}/health`, { signal: AbortSignal.timeout(2_000) })).rejects.toThrow();
  }, 30_000);

  it('starts again on the same DATA_DIR with the data and keys intact', async () => {
    // Act
    server = await startServer(env, port);

    // Assess
    expect(server.output().stdout).toMatch(/already registered/);
    expect(server.output().stdout).not.toMatch(/apk_/);
    const listed = await call(server, 'GET', '/v1/chat/agents', { key: initKey });
    expect(listed.status).toBe(200);
    // (The call CLI's test added a voice agent beside it.)
    expect(listed.body.data).toContainEqual(expect.objectContaining({ id: agentId, orgId: 'acme', fullName: agentBody.fullName }));
    expect((await call(server, 'GET', `/v1/chat/agents/${agentId}`, { key: cliKey })).status).toBe(200);
    const keys = await call(server, 'GET', '/v1/chat/api-keys', { key: initKey });
    expect(keys.body.data.map((item: { name: string }) => item.name).sort()).toEqual(['ci', 'deploy', 'init']);
    expect(readFileSync(join(dataDir, 'secrets.key'), 'utf8')).toBe(secretsKey);

    // Assess: it still stops cleanly after a restart.
    expect(await stopServer(server)).toEqual({ code: 0, signal: null });
  }, 120_000);
});

describe('first start without INIT_*', () => {
  let dataDir: string;
  let port: number;
  let env: NodeJS.ProcessEnv;
  let printedKey: string;
  let server: RunningServer | undefined;

  beforeAll(async () => {
    dataDir = tempDataDir();
    port = await freePort();
    env = childEnv({ DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1' });
  });

  afterAll(async () => {
    if (server && isRunning(server.child)) await stopServer(server);
  }, 30_000);

  it('prints a full-access key once', async () => {
    // Act
    server = await startServer(env, port);

    // Assess
    const printed = server.output().stdout.match(/apk_[A-Za-z0-9_-]+/g) ?? [];
    expect(printed).toHaveLength(1);
    printedKey = printed[0] as string;
    expect(printedKey.length).toBeGreaterThanOrEqual(36);
    expect((await call(server, 'GET', '/v1/chat/agents', { key: printedKey })).status).toBe(200);
    expect((await call(server, 'POST', '/v2/chat/agents', { key: printedKey, body: agentBody })).status).toBe(201);
    const keys = await call(server, 'GET', '/v1/chat/api-keys', { key: printedKey });
    expect(keys.status).toBe(200);
    expect(keys.body.pagination.total).toBe(1);
    expect(await stopServer(server)).toEqual({ code: 0, signal: null });
  }, 120_000);

  it('does not print a new key on the next start, and the first key still works', async () => {
    // Act
    server = await startServer(env, port);

    // Assess
    expect(server.output().stdout).not.toMatch(/apk_/);
    const keys = await call(server, 'GET', '/v1/chat/api-keys', { key: printedKey });
    expect(keys.status).toBe(200);
    expect(keys.body.pagination.total).toBe(1);
    expect(keys.body.data[0].orgId).toBe(server.output().stdout.match(/Organization ([0-9a-f-]{36})/)?.[1]);
    expect((await call(server, 'GET', '/v1/chat/agents', { key: printedKey })).body.pagination.total).toBe(1);
    expect(await stopServer(server)).toEqual({ code: 0, signal: null });
  }, 120_000);
});
