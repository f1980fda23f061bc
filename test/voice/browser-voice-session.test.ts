/**
 * Voice sessions from the browser (platform `WEB`) on the local runtime: `POST /v1/chat/voice/sessions`, then the
 * media worker's WebSocket as a browser drives it, with real audio: the user speaks with eSpeak NG as PCM 16 kHz
 * frames in real time, and the agent's PCM frames are heard with PocketSphinx. Its token opens one connection, once,
 * of its own organization, within its minute.
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { wordErrorRate } from '../../shared/speech/word-error-rate.ts';
import { speakableEnd } from '../../shared/voice/media-call.ts';
import { createMediaWorker, type MediaWorker } from '../../shared/voice/media-worker.ts';
import { mediaWorkerRuntime } from '../../shared/voice/voice-runtime.ts';
import { expectError } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';
import { connect, ofType } from '../support/browser-voice.ts';
import { heardFromBrowser } from '../support/speech.ts';
import { sessionEvents, voiceOrg, voiceTestApi, type VoiceOrg } from '../support/voice.ts';

const suite = voiceTestApi();
const { receiver } = suite;

/** The word error rate the built-in engines reach at most on a reply (decision 471): what says the reply was heard. */
const heardWerBound = 0.9;

const builtinAgent = { voice: { provider: 'builtin', voiceId: 'en-us' } };

async function startSession(org: VoiceOrg, body: object = {}) {
  return suite.api.request('POST', '/v1/chat/voice/sessions', { key: org.key, body: { agentId: org.agentId, ...body }, headers: { 'idempotency-key': crypto.randomUUID() } });
}

/** How many pieces the worker speaks `text` in (decision 463). */
function piecesOf(text: string): number {
  let count = 0;
  let rest = text;
  for (let end = speakableEnd(rest); end > 0; end = speakableEnd(rest)) {
    count += 1;
    rest = rest.slice(end);
  }
  return rest.trim() ? count + 1 : count;
}


describe('a voice session from the browser', () => {
  it('hears the user’s PCM audio, answers in audio and transcripts, and ends once with analysis, metered in voice seconds', async () => {
    const org = await voiceOrg(suite.api, receiver, suite.receiverUrl, { agent: builtinAgent });
    const started = await startSession(org);
    expect(started.status, started.text).toBe(201);
    const { sessionId, url, token, expiresAt } = started.body;
    expect(url).toMatch(new RegExp(`^ws://127\\.0\\.0\\.1:\\d+/voice-session/${org.orgId}/${sessionId}$`));
    expect(Date.parse(expiresAt)).toBeGreaterThan(Date.now());

    const browser = connect(url);
    browser.send({ type: 'start', token });
    await eventually(() => ofType(browser, 'session.started'), (found) => found.length === 1);
    await browser.say('Tell me the weather please.');
    const answered = await eventually(() => ofType(browser, 'agent.transcript').filter((event) => event.final), (found) => found.length === 1);
    // The reply's audio is whole once each of its pieces has ended.
    await eventually(() => ofType(browser, 'agent.audio.end'), (found) => found.length === piecesOf(answered[0]!.text as string));
    const replyAudio = Buffer.concat(browser.audio);
    await browser.say('Okay, bye bye.');
    const code = await browser.closed;
    browser.stop();

    // What the user said, as recognised, and the agent's reply, as text and as audio the built-in recogniser hears.
    const userFinals = ofType(browser, 'user.transcript').filter((event) => event.final);
    expect(userFinals[0]!.text).toContain('weather');
    const reply = answered[0]!.text as string;
    expect(reply).toContain('You said');
    expect(ofType(browser, 'agent.audio.start').length).toBeGreaterThanOrEqual(1);
    expect(replyAudio.length).toBeGreaterThan(16_000);
    expect(wordErrorRate(reply, await heardFromBrowser(replyAudio))).toBeLessThanOrEqual(heardWerBound);
    // The agent said goodbye: the session ended once, as the agent's hang-up, and the browser was told.
    expect(code).toBe(1000);
    expect(ofType(browser, 'session.ended')).toEqual([{ type: 'session.ended', reason: 'HANGUP_AGENT' }]);

    const events = await sessionEvents(receiver, org.webhookPath, sessionId);
    const ended = events.filter((receipt) => receipt.body.eventType === 'session.ended');
    expect(ended).toHaveLength(1);
    expect(ended[0]!.body).toMatchObject({ state: 'CLOSED', analysis: { status: 'COMPLETED' } });
    const session = (await suite.api.request('GET', `/api/v1/chat/sessions/${sessionId}`, { key: org.key })).body;
    expect(session).toMatchObject({ type: 'VOICE', platform: 'WEB', endedReason: 'HANGUP_AGENT' });
    const messages = (await suite.api.request('GET', `/api/v1/chat/sessions/${sessionId}/messages?limit=50`, { key: org.key })).body.data;
    expect(messages.map((message: { role: string }) => message.role)).toEqual(['USER', 'ASSISTANT', 'USER', 'ASSISTANT']);
    expect(messages[1].content).toBe(reply);
    const usage = await eventually(
      () => suite.api.request('GET', '/v1/chat/usage', { key: org.key }),
      (answer) => answer.body.currentPeriod?.metrics.voice_seconds >= 1,
    );
    expect(usage.body.currentPeriod.metrics.voice_seconds).toBeGreaterThanOrEqual(1);
  }, 120_000);

  it('ends on the browser’s hang-up, and its token opens one connection, once', async () => {
    const org = await voiceOrg(suite.api, receiver, suite.receiverUrl, { agent: builtinAgent });
    const { sessionId, url, token } = (await startSession(org)).body;
    const first = connect(url);
    first.send({ type: 'start', token });
    await eventually(() => ofType(first, 'session.started'), (found) => found.length === 1);

    const replayed = connect(url);
    replayed.send({ type: 'start', token });
    expect(await replayed.closed).toBe(4401);
    expect(ofType(replayed, 'session.started')).toEqual([]);

    first.send({ type: 'hangup' });
    expect(await first.closed).toBe(1000);
    expect(ofType(first, 'session.ended')).toEqual([{ type: 'session.ended', reason: 'HANGUP_CALLEE' }]);
    const session = (await suite.api.request('GET', `/api/v1/chat/sessions/${sessionId}`, { key: org.key })).body;
    expect(session).toMatchObject({ state: 'CLOSED', endedReason: 'HANGUP_CALLEE' });
  });

  it('is out of reach of another organization: its key cannot start one for the agent, nor its token open another’s session', async () => {
    const org = await voiceOrg(suite.api, receiver, suite.receiverUrl, { agent: builtinAgent });
    const other = await voiceOrg(suite.api, receiver, suite.receiverUrl, { agent: builtinAgent });
    expectError(await startSession({ ...other, agentId: org.agentId }), 404, 'NOT_FOUND');

    const mine = (await startSession(org)).body;
    const theirs = (await startSession(other)).body;
    // Their token, on our session's URL; our session's id under their organization.
    const crossed = connect(mine.url);
    crossed.send({ type: 'start', token: theirs.token });
    expect(await crossed.closed).toBe(4401);
    const elsewhere = connect(mine.url.replace(org.orgId, other.orgId));
    elsewhere.send({ type: 'start', token: mine.token });
    expect(await elsewhere.closed).toBe(4401);
    // Both tokens still open their own sessions.
    const own = connect(mine.url);
    own.send({ type: 'start', token: mine.token });
    await eventually(() => ofType(own, 'session.started'), (found) => found.length === 1);
    own.send({ type: 'hangup' });
    await own.closed;
  });

  describe('a token past its minute', () => {
    let worker: MediaWorker;
    let port = 0;
    beforeAll(async () => {
      // The worker's clock a minute and a second ahead of the API's: every token it is shown has expired.
      worker = createMediaWorker({ ...mediaWorkerRuntime(), clock: { now: () => new Date(Date.now() + 61_000) } });
      await new Promise<void>((resolveListen) => worker.server.listen(0, '127.0.0.1', resolveListen));
      port = (worker.server.address() as AddressInfo).port;
    });
    afterAll(() => worker.close());

    it('is refused', async () => {
      const org = await voiceOrg(suite.api, receiver, suite.receiverUrl, { agent: builtinAgent });
      const { url, token } = (await startSession(org)).body;
      const late = connect(url.replace(/:\d+\//, `:${port}/`));
      late.send({ type: 'start', token });
      expect(await late.closed).toBe(4401);
      // Still unused: the worker with the right time admits it.
      const onTime = connect(url);
      onTime.send({ type: 'start', token });
      await eventually(() => ofType(onTime, 'session.started'), (found) => found.length === 1);
      onTime.send({ type: 'hangup' });
      await onTime.closed;
    });
  });
});
