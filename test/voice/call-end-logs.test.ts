/**
 * What a call's ordinary end logs: nothing above INFO. A callee who hangs up while the agent is speaking ends the
 * call as any caller may: the relay's closed connection, and the session that takes no more messages, are no warning.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { logger } from '../../shared/platform/logger.ts';
import { startApi, type TestApi } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';
import { startOpenAIStub, type OpenAIStub } from '../support/openai-stub.ts';
import { voiceOrg } from '../support/voice.ts';
import { Receiver } from '../support/webhook-receiver.ts';

let api: TestApi;
let stub: OpenAIStub;
const receiver = new Receiver();
let receiverUrl: string;

beforeAll(async () => {
  receiverUrl = await receiver.start();
  // A model slow enough (30 tokens, 40 ms apart) that the callee hangs up long before the reply is spoken.
  stub = await startOpenAIStub({ tokens: 30, delayMs: 40 });
  api = await startApi({ OPENAI_COMPATIBLE_BASE_URL: stub.baseUrl, OPENAI_COMPATIBLE_MODELS: 'slow-model' }, { streamPoller: true, queues: true, voice: true });
});
afterAll(async () => {
  await api.close();
  await stub.close();
  await receiver.close();
});
afterEach(() => vi.restoreAllMocks());

describe('the end of a call', { timeout: 90_000 }, () => {
  it('when the callee hangs up while the agent speaks, logs no warning or error', async () => {
    // Prepare
    const models = await api.request('GET', '/v1/chat/models?provider=openai-compatible', { key: (await api.newOrg()).key });
    const org = await voiceOrg(api, receiver, receiverUrl, { agent: { modelId: models.body.data[0].id } });
    const to = '+15550160';
    const tokensHeard: string[] = [];
    let hangUp = () => {};
    api.voice!.simulator.attachCallee(to, {
      onConnected: (speak) => {
        speak('Tell me a long story');
        hangUp = () => speak(null);
      },
      onToken: (token) => {
        tokensHeard.push(token);
        if (tokensHeard.length === 1) hangUp();
      },
      onEnd: () => undefined,
    });
    const informed = vi.spyOn(logger, 'info');
    const warned = vi.spyOn(logger, 'warn');
    const failed = vi.spyOn(logger, 'error');

    // Act
    const started = await api.request('POST', `/api/v1/phone-numbers/${org.phoneNumberId}/calls/start`, { key: org.key, body: { to_phone_number: to, agent_id: org.agentId } });
    expect(started.status, started.text).toBe(201);
    const sessionId: string = started.body.sessionId;
    const session = await eventually(async () => (await api.request('GET', `/api/v1/chat/sessions/${sessionId}`, { key: org.key })).body, (found) => found.state === 'CLOSED');
    // The turn is over once the relay handler has logged how it ended, at whatever level.
    const logLines = () => [...informed.mock.calls, ...warned.mock.calls, ...failed.mock.calls].map(([message]) => String(message));
    await eventually(logLines, (lines) => lines.some((line) => /^(call ended during the reply|relay refused|relay failed)/.test(line)));

    // Assess: the callee heard the start of the reply only, the call ended as their hang-up, and nothing was logged
    // above INFO (this file's one call is all the in-process handlers did).
    expect(tokensHeard.length).toBeLessThan(30);
    expect(session.endedReason).toBe('HANGUP_CALLEE');
    expect(warned.mock.calls).toEqual([]);
    expect(failed.mock.calls).toEqual([]);
  });
});
