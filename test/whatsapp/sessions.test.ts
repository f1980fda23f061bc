import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';
import { Receiver } from '../support/webhook-receiver.ts';
import { sessionEvents } from '../support/voice.ts';
import { customerSessions, messagesOf, repliesTo, uniqueCustomer, whatsappOrg, type WhatsappOrg } from '../support/whatsapp.ts';

const idleSeconds = 2;
let api: TestApi;
const receiver = new Receiver();
let receiverUrl: string;

beforeAll(async () => {
  receiverUrl = await receiver.start();
  api = await startApi({ SESSION_IDLE_TIMEOUT_SECONDS: String(idleSeconds) }, { queues: true, whatsapp: true, streamPoller: true, ttlSweepIntervalMs: 200 });
});
afterAll(async () => {
  await api.close();
  await receiver.close();
});

const simulator = () => api.whatsapp!;

/**
 * The customer's sessions, newest first: the earlier one in `endedState`, and a new one that took `text`. The new
 * one may itself have expired by the time it is listed (an idle timeout of 2 s on a busy machine).
 */
async function expectNewSessionAfter(org: WhatsappOrg, customer: string, endedState: string, text: string): Promise<void> {
  const [newer, older] = await customerSessions(api, org, customer);
  expect(older).toMatchObject({ state: endedState });
  expect(['OPEN', 'EXPIRED']).toContain(newer.state);
  expect(newer.id).not.toBe(older.id);
  const contents = (await messagesOf(api, org, newer.id)).map((message) => message.content);
  expect(contents).toContain(text);
}

async function subscribe(org: WhatsappOrg): Promise<string> {
  const path = `/ok/${crypto.randomUUID()}`;
  const endpoint = await api.request('POST', '/v1/chat/webhooks', { key: org.key, body: { url: receiverUrl + path, events: ['*'] } });
  expect(endpoint.status, endpoint.text).toBe(201);
  receiver.secrets.set(path, [endpoint.body.secret]);
  return path;
}

describe('the sessions of a WhatsApp customer', () => {
  it('opens a new session after the previous one expired, with session events and analysis as for any session', async () => {
    const org = await whatsappOrg(api);
    const path = await subscribe(org);
    const customer = uniqueCustomer();
    await simulator().customerSays({ phoneNumberId: org.phoneNumberId, from: customer, text: 'First visit' });
    await repliesTo(simulator(), org, customer, 1);
    const [first] = await customerSessions(api, org, customer);
    const events = await sessionEvents(receiver, path, first.id);
    expect(events.map((receipt) => receipt.body.eventType)).toEqual(expect.arrayContaining(['session.created', 'session.ended']));
    const ended = events.find((receipt) => receipt.body.eventType === 'session.ended')!;
    expect(ended.body).toMatchObject({ state: 'EXPIRED', platform: 'WHATSAPP', analysis: expect.any(Object) });

    await simulator().customerSays({ phoneNumberId: org.phoneNumberId, from: customer, text: 'Back again' });
    await repliesTo(simulator(), org, customer, 2);
    await expectNewSessionAfter(org, customer, 'EXPIRED', 'Back again');
  });

  it('opens a new session after the agent ended the last one', async () => {
    const org = await whatsappOrg(api);
    const customer = uniqueCustomer();
    await simulator().customerSays({ phoneNumberId: org.phoneNumberId, from: customer, text: 'Thanks, bye!' });
    expect(await repliesTo(simulator(), org, customer, 1)).toEqual(['Goodbye! Thanks for chatting.']);
    const [closed] = await eventually(() => customerSessions(api, org, customer), (found) => found[0]?.state === 'CLOSED');
    expect(closed).toMatchObject({ state: 'CLOSED', endedReason: 'AGENT_ENDED' });
    await simulator().customerSays({ phoneNumberId: org.phoneNumberId, from: customer, text: 'One more thing' });
    await repliesTo(simulator(), org, customer, 2);
    await expectNewSessionAfter(org, customer, 'CLOSED', 'One more thing');
  });
});
