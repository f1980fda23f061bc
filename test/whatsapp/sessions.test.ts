import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';
import { Receiver } from '../support/webhook-receiver.ts';
import { sessionEvents } from '../support/voice.ts';
import { customerSessions, repliesTo, uniqueCustomer, whatsappOrg, type WhatsappOrg } from '../support/whatsapp.ts';

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
    const sessions = await customerSessions(api, org, customer);
    expect(sessions.map((session) => session.state)).toEqual(['OPEN', 'EXPIRED']);
    expect(sessions[0].id).not.toBe(first.id);
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
    expect((await customerSessions(api, org, customer)).map((session) => session.state)).toEqual(['OPEN', 'CLOSED']);
  });
});
