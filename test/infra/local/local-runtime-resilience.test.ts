/**
 * The local runtime against clients that misbehave, and against being stopped or killed: it keeps serving, and it
 * never leaves DynamoDB Local running behind it.
 */
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../infra/local/free-port.ts';
import {
  call,
  childEnv,
  isRunning,
  startServer,
  stopEverything,
  stopServer,
  tempDataDir,
  waitForDynamoDbLocalToEnd,
  waitForExit,
  dynamoDbLocalPids,
  type RunningServer,
} from '../../support/local-process.ts';

afterAll(stopEverything, 30_000);

/**
 * One raw HTTP exchange: writes `request` (bytes exactly as given) and leaves once `leaveAfter` bytes of the answer
 * have arrived (or, given a pattern, once the answer so far matches it), when the server closes, or after `maxMs`;
 * resolves with what arrived. It leaves by hanging up, or by sending a byte of garbage and closing its side.
 */
function exchange(port: number, request: string, leaveAfter: number | RegExp, maxMs: number, leave: 'hang-up' | 'garbage' = 'hang-up'): Promise<Buffer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let left = false;
    const socket = connect(port, '127.0.0.1', () => socket.write(request));
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      const answer = Buffer.concat(chunks);
      resolve(typeof leaveAfter === 'number' ? answer.subarray(0, leaveAfter) : answer);
    };
    const timer = setTimeout(done, maxMs);
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      const enough = typeof leaveAfter === 'number' ? size >= leaveAfter : leaveAfter.test(Buffer.concat(chunks).toString());
      if (!enough || left) return;
      left = true;
      if (leave === 'hang-up') return done();
      socket.end('X');
      setTimeout(done, 20);
    });
    socket.on('error', done);
    socket.on('close', done);
  });
}

/** Runs `task` for 0..count-1, at most `concurrency` at a time. */
async function forEachOffset(count: number, concurrency: number, task: (offset: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await task(next++);
    }),
  );
}

describe('a running local runtime', () => {
  const key = randomBytes(24).toString('base64url');
  let server: RunningServer;
  let port: number;
  let agentId: string;

  beforeAll(async () => {
    port = await freePort();
    const env = childEnv({
      DATA_DIR: tempDataDir(),
      PORT: String(port),
      HOST: '127.0.0.1',
      INIT_ORG_ID: 'hostile-clients',
      INIT_API_KEY: key,
      // Hundreds of hostile requests in seconds from one organization: its plan's rate limit and message quota
      // are not what this suite tests.
      RATE_LIMITING: 'off',
      PLANS: JSON.stringify({ free: { name: 'Free', quotas: { chat_messages: null, voice_seconds: null, knowledge_chunks: null }, concurrentCalls: 1, requestsPerSecond: 5, burst: 10 } }),
      EVENT_STREAM_HEARTBEAT_MS: '150',
    });
    server = await startServer(env, port);
    agentId = (await call(server, 'POST', '/v2/chat/agents', { key, body: { fullName: 'A', description: 'A', role: 'A' } })).body.id;
  }, 90_000);

  afterAll(async () => {
    if (isRunning(server.child)) await stopServer(server);
  }, 30_000);

  async function expectStillServing(): Promise<void> {
    expect(isRunning(server.child), server.output().stderr).toBe(true);
    expect((await call(server, 'GET', '/health')).status).toBe(200);
    expect(server.output().stderr).not.toMatch(/Unhandled|uncaught/i);
  }

  const eventStreamRequest = `GET /v1/chat/events/stream HTTP/1.1\r\nHost: x\r\nx-api-key: ${key}\r\n\r\n`;

  it("survives the probe's packet: an unauthenticated event stream request with a stray byte after it", async () => {
    // Act
    await exchange(port, `GET /v1/chat/events/stream HTTP/1.1\r\nHost: x\r\nx-api-key: apk_${'A'.repeat(32)}\r\n\r\nX`, Infinity, 500);

    // Assess
    await new Promise((resolve) => setTimeout(resolve, 200));
    await expectStillServing();
  });

  it('survives a client that hangs up, or sends garbage, at every byte offset of the event stream', async () => {
    // Prepare: the stream's first bytes, through its retry advice (however long a busy machine takes to send them).
    const whole = await exchange(port, eventStreamRequest, /\r\n\r\n[\s\S]*retry: \d+\n/, 30_000);
    expect(whole.toString()).toMatch(/^HTTP\/1\.1 200[\s\S]*\r\n\r\n[\s\S]*retry: /);

    // Act
    await forEachOffset(whole.length, 16, async (offset) => {
      await exchange(port, eventStreamRequest, offset, 1_000, 'hang-up');
      await exchange(port, eventStreamRequest, offset, 1_000, 'garbage');
    });

    // Assess
    await expectStillServing();
  }, 120_000);

  it('survives a client that sends garbage and hangs up at every byte offset of a streamed reply', async () => {
    // Prepare
        const replyRequest = (sessionId: string) => {
      const body = JSON.stringify({ content: 'Bye' });
      return `POST /v1/chat/chat/sessions/${sessionId}/messages HTTP/1.1\r\nHost: x\r\nx-api-key: ${key}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`;
    };
    const openSession = async () => {
      const created = await call(server, 'POST', '/v1/chat/chat/sessions', { key, body: { agentId } });
      return created.body.id as string;
    };
    const whole = await exchange(port, replyRequest(await openSession()), /data: \[DONE\]/, 30_000);
    expect(whole.toString()).toMatch(/^HTTP\/1\.1 200[\s\S]*data: \[DONE\]/);

    // Act
    await forEachOffset(whole.length, 8, async (offset) => {
      await exchange(port, replyRequest(await openSession()), offset, 3_000, 'garbage');
    });

    // Assess
    await expectStillServing();
  }, 300_000);
});

describe('stopping the local runtime', () => {
  it('ends npm start, the runtime and DynamoDB Local on SIGTERM to npm', async () => {
    // Prepare
    const port = await freePort();
    const dataDir = tempDataDir();
    const server = await startServer(childEnv({ DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1' }), port, { viaNpm: true });
    expect(dynamoDbLocalPids(dataDir)).toHaveLength(1);

    // Act
    server.child.kill('SIGTERM');

    // Assess
    expect(await waitForExit(server.child, 15_000)).not.toBe('timeout');
    await expect(fetch(`${server.baseUrl}/health`, { signal: AbortSignal.timeout(2_000) })).rejects.toThrow();
    expect(await waitForDynamoDbLocalToEnd(dataDir, 10_000)).toBe(true);
  }, 120_000);

  it('stops on SIGTERM within seconds while an event stream is open', async () => {
    // Prepare
    const port = await freePort();
    const key = randomBytes(24).toString('base64url');
    const env = childEnv({ DATA_DIR: tempDataDir(), PORT: String(port), HOST: '127.0.0.1', INIT_ORG_ID: 'open-stream', INIT_API_KEY: key });
    const server = await startServer(env, port);
    const stream = await fetch(`${server.baseUrl}/v1/chat/events/stream`, { headers: { 'x-api-key': key } });
    expect(stream.status).toBe(200);

    // Act
    const exit = await stopServer(server);

    // Assess
    expect(exit).toEqual({ code: 0, signal: null });
    await stream.body?.cancel().catch(() => undefined);
  }, 120_000);

  it('leaves no DynamoDB Local behind when the runtime is killed with SIGKILL', async () => {
    // Prepare
    const port = await freePort();
    const dataDir = tempDataDir();
    const server = await startServer(childEnv({ DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1' }), port);
    expect(dynamoDbLocalPids(dataDir)).toHaveLength(1);

    // Act
    server.child.kill('SIGKILL');

    // Assess
    expect(await waitForDynamoDbLocalToEnd(dataDir, 10_000)).toBe(true);
  }, 120_000);
});
