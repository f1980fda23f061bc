/**
 * The WhatsApp simulator is no more forgiving than Meta: notifications written as Meta writes them (non-ASCII
 * escaped, signed as written), users known by their business-scoped user id alone, and sends addressed by `to` (a
 * phone number) or `recipient` (a BSUID) and nothing else. Driven here without the platform.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { simulatorDefaults, startWhatsappSimulator, type WhatsappSimulator } from '../../infra/local/whatsapp-simulator.ts';
import { metaSignature } from '../../shared/whatsapp/meta-signature.ts';
import { eventually } from '../support/eventually.ts';

let simulator: WhatsappSimulator;

beforeAll(async () => {
  // Nobody listens there: these tests read what the simulator would post, and what it answers.
  simulator = await startWhatsappSimulator({ apiBaseUrl: 'http://127.0.0.1:9' });
  simulator.reportStatuses = false;
});
afterAll(() => simulator.stop());

const send = (body: object) =>
  fetch(`${simulator.graphApiUrl}/1234567890/messages`, {
    method: 'POST',
    headers: { authorization: `Bearer ${simulatorDefaults.accessToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ messaging_product: 'whatsapp', recipient_type: 'individual', type: 'text', text: { body: 'Hi' }, ...body }),
  });

describe('the WhatsApp simulator, as strict as Meta', () => {
  it('writes non-ASCII as lowercase \\u escapes, and signs the text as written', () => {
    const { body } = simulator.notificationOf({ phoneNumberId: '1234567890', from: '15550001234', name: 'Zoë', text: 'thanks 👍' });

    expect(body).toContain('"body":"thanks \\ud83d\\udc4d"');
    expect(body).toContain('"name":"Zo\\u00eb"');
    expect(/[^\x00-\x7f]/.test(body)).toBe(false);
    expect(simulator.sign('1234567890', body)).toBe(metaSignature(simulatorDefaults.appSecret, body));
  });

  it('names a user who shares only their business-scoped user id by user_id and from_user_id, without wa_id or from', () => {
    const { body } = simulator.notificationOf({ phoneNumberId: '1234567890', userId: 'US.13491208655302741918', username: '@sheena', text: 'Hi' });
    const value = JSON.parse(body).entry[0].changes[0].value;

    expect(value.contacts).toEqual([{ profile: { name: 'Local customer', username: '@sheena' }, user_id: 'US.13491208655302741918' }]);
    expect(value.messages[0]).toMatchObject({ from_user_id: 'US.13491208655302741918' });
    expect(value.messages[0].from).toBeUndefined();
  });

  it('takes a phone number in `to` and a BSUID in `recipient`, and refuses either in the other field (#100)', async () => {
    const toPhone = await send({ to: '15550001234' });
    const toUser = await send({ recipient: 'US.13491208655302741918' });
    const userInTo = await send({ to: 'US.13491208655302741918' });
    const phoneInRecipient = await send({ recipient: '15550001234' });
    const nobody = await send({});

    expect(await toPhone.json()).toMatchObject({ contacts: [{ input: '15550001234', wa_id: '15550001234' }] });
    expect(await toUser.json()).toMatchObject({ contacts: [{ input: 'US.13491208655302741918', user_id: 'US.13491208655302741918' }] });
    for (const refused of [userInTo, phoneInRecipient, nobody]) {
      expect(refused.status).toBe(400);
      expect(await refused.json()).toMatchObject({ error: { code: 100 } });
    }
  });

  it('keeps the 24-hour window of a customer known by their BSUID alone, and takes a template addressed by `recipient`', async () => {
    const statusesOf = (wamid: string) =>
      simulator.notifications.flatMap((notification) => JSON.parse(notification.body).entry[0].changes[0].value.statuses ?? []).filter((status: { id: string }) => status.id === wamid);
    simulator.reportStatuses = true;
    try {
      await simulator.customerSays({ phoneNumberId: '1234567890', userId: 'US.20000000000000000001', text: 'Hi' });
      const inside = (await (await send({ recipient: 'US.20000000000000000001' })).json()) as { messages: { id: string }[] };
      const outside = (await (await send({ recipient: 'US.20000000000000000002' })).json()) as { messages: { id: string }[] };
      const template = await send({ recipient: 'US.20000000000000000002', type: 'template', text: undefined, template: { name: 'hello_world', language: { code: 'en_US' } } });

      expect(template.status).toBe(200);
      expect(await template.json()).toMatchObject({ contacts: [{ input: 'US.20000000000000000002', user_id: 'US.20000000000000000002' }], messages: [{ message_status: 'accepted' }] });
      const delivered = await eventually(() => statusesOf(inside.messages[0]!.id), (found) => found.length === 2);
      expect(delivered.map((status: { status: string; recipient_user_id: string }) => [status.status, status.recipient_user_id])).toEqual([
        ['sent', 'US.20000000000000000001'],
        ['delivered', 'US.20000000000000000001'],
      ]);
      const [failed] = await eventually(() => statusesOf(outside.messages[0]!.id), (found) => found.length === 1);
      expect(failed).toMatchObject({ status: 'failed', recipient_user_id: 'US.20000000000000000002', errors: [{ code: 131047 }] });
    } finally {
      simulator.reportStatuses = false;
    }
  });
});
