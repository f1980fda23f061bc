/**
 * Our WhatsApp side against Meta's own documents, not against our simulator: Meta's webhook examples
 * (test/fixtures/meta/, each with its source), posted as Meta writes them (non-ASCII escaped, signed with the app
 * secret). Users known only by their business-scoped user id (BSUID) get a session of their own and replies
 * addressed as Meta documents; what is acknowledged and not handled is logged and counted.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { escapeUnicode } from '../../infra/local/whatsapp-simulator.ts';
import { logger } from '../../shared/platform/logger.ts';
import fixtures from '../fixtures/meta/webhook-notifications.json' with { type: 'json' };
import { startApi, type TestApi } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';
import { messagesOf, repliesTo, uniqueCustomer, uniqueUserId, whatsappOrg, type WhatsappOrg } from '../support/whatsapp.ts';

let api: TestApi;

beforeAll(async () => {
  api = await startApi({}, { queues: true, whatsapp: true });
});
afterAll(() => api.close());

const simulator = () => api.whatsapp!;
const echo = (text: string) => `You said: "${text}". I am the built-in offline model; connect a provider model for real answers.`;
const documentedPhone = '16505551234';
const documentedUserId = 'US.13491208655302741918';

/**
 * A documented notification for this test's number and customer: Meta's phone number, BSUID, ids and timestamps
 * replaced (a message of 2025 is outside the 24-hour window), `replace` for the rest. Meta's escaped text, signed.
 */
async function postDocumented(org: WhatsappOrg, name: keyof typeof fixtures.notifications, customer: { phone?: string; userId?: string }, replace: Record<string, string> = {}) {
  let text = JSON.stringify(fixtures.notifications[name])
    .replaceAll('106540352242922', org.phoneNumberId)
    .replaceAll(documentedPhone, customer.phone ?? documentedPhone)
    .replaceAll(documentedUserId, customer.userId ?? documentedUserId)
    .replaceAll('"1749416383"', `"${Math.floor(Date.now() / 1000)}"`)
    .replace(/wamid\.HBgLMTY1MDM4Nzk0MzkVAgAS[A-Za-z0-9=]+/g, () => `wamid.${randomBytes(24).toString('base64url')}`);
  for (const [from, to] of Object.entries(replace)) text = text.replaceAll(from, to);
  const body = escapeUnicode(text);
  return simulator().post(org.phoneNumberId, body, simulator().sign(org.phoneNumberId, body));
}

const sessionsOf = async (org: WhatsappOrg) => (await api.request('GET', '/v1/chat/chat/sessions?platform=WHATSAPP&limit=100', { key: org.key })).body.data as any[];
const sentTo = (org: WhatsappOrg, address: string) => simulator().sent.filter((message) => message.phoneNumberId === org.phoneNumberId && message.to === address);

describe("Meta's documented notifications", () => {
  it("the reference's text message is answered, addressed to the customer's phone number", async () => {
    const org = await whatsappOrg(api);
    const phone = uniqueCustomer();

    const posted = await postDocumented(org, 'textMessage', { phone });

    expect(posted.status).toBe(200);
    expect(await repliesTo(simulator(), org, phone, 1)).toEqual([echo('Does it come in another color?')]);
    expect(sentTo(org, phone)[0]?.addressedBy).toBe('to');
    const [session] = await sessionsOf(org);
    expect(session.metadata.whatsapp).toMatchObject({ customerWaId: phone, customerName: 'Sheena Nelson' });
  });

  it('a user known only by their business-scoped user id gets a session of their own, replies by `recipient`, and the statuses Meta reports for them', async () => {
    // Prepare
    const org = await whatsappOrg(api);
    const userId = uniqueUserId();
    simulator().reportStatuses = false;

    // Act
    const first = await postDocumented(org, 'textMessageFromBusinessScopedUser', { userId });
    const [reply] = await eventually(() => sentTo(org, userId), (sent) => sent.length === 1);
    const delivered = await postDocumented(org, 'statusDeliveredToBusinessScopedUser', { userId }, { 'wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBI1RjQyNUE3NEYxMzAzMzQ5MkEA': reply!.wamid, '"1750263773"': `"${Math.floor(Date.now() / 1000)}"` });
    const second = await postDocumented(org, 'textMessageFromBusinessScopedUser', { userId }, { 'Does it come in another color?': 'And in blue?' });
    await eventually(() => sentTo(org, userId), (sent) => sent.length === 2);
    simulator().reportStatuses = true;

    // Assess
    expect([first.status, delivered.status, second.status]).toEqual([200, 200, 200]);
    expect(sentTo(org, userId).map((message) => [message.addressedBy, message.body])).toEqual([
      ['recipient', echo('Does it come in another color?')],
      ['recipient', echo('And in blue?')],
    ]);
    const sessions = await sessionsOf(org);
    expect(sessions).toHaveLength(1);
    expect(sessions[0].metadata.whatsapp).toEqual({ numberId: org.numberId, phoneNumberId: org.phoneNumberId, customerUserId: userId, customerName: 'Sheena Nelson', customerUsername: '@sheena' });
    const transcript = await eventually(() => messagesOf(api, org, sessions[0].id), (found) => found[1]?.metadata.whatsapp?.sends?.[0]?.status === 'delivered');
    expect(transcript.map((message) => message.content)).toEqual(['Does it come in another color?', echo('Does it come in another color?'), 'And in blue?', echo('And in blue?')]);
  });

  it('a user who gave their phone number and BSUID, then hides their number, stays in one session: replies go `to` the number while it is shared', async () => {
    const org = await whatsappOrg(api);
    const phone = uniqueCustomer();
    const userId = uniqueUserId();

    await postDocumented(org, 'textMessageWithPhoneAndBusinessScopedUser', { phone, userId });
    await repliesTo(simulator(), org, phone, 1);
    await postDocumented(org, 'textMessageFromBusinessScopedUser', { userId }, { 'Does it come in another color?': 'And now?' });
    await eventually(() => sentTo(org, userId), (sent) => sent.length === 1);

    expect(sentTo(org, phone).map((message) => message.addressedBy)).toEqual(['to']);
    expect(sentTo(org, userId).map((message) => message.addressedBy)).toEqual(['recipient']);
    const sessions = await sessionsOf(org);
    expect(sessions).toHaveLength(1);
    expect(sessions[0].metadata.whatsapp).toMatchObject({ customerWaId: phone, customerUserId: userId });
    expect((await messagesOf(api, org, sessions[0].id)).filter((message) => message.role === 'USER').map((message) => message.content)).toEqual(['Does it come in another color?', 'And now?']);
  });

  it('emoji, escaped as Meta writes them, are answered (thanks 👍), and a reaction gets the unsupported-message reply', async () => {
    const org = await whatsappOrg(api);
    const phone = uniqueCustomer();

    const thanks = await postDocumented(org, 'textMessageWithEmoji', { phone });
    await repliesTo(simulator(), org, phone, 1);
    const reaction = await postDocumented(org, 'reaction', { phone });
    const replies = await repliesTo(simulator(), org, phone, 2);

    expect([thanks.status, reaction.status]).toEqual([200, 200]);
    expect(replies).toEqual([echo('thanks 👍'), 'Sorry, I cannot read this kind of message. Could you write your question?']);
    const [session] = await sessionsOf(org);
    expect(session.metadata.whatsapp.customerName).toBe('Zoë 🌻');
    expect((await messagesOf(api, org, session.id)).map((message) => message.content)).toEqual([
      'thanks 👍',
      echo('thanks 👍'),
      '[reaction]',
      'Sorry, I cannot read this kind of message. Could you write your question?',
    ]);
  });

  it('what is acknowledged and not handled (a message naming no sender, another field) is answered 200, logged and counted', async () => {
    // Prepare
    const org = await whatsappOrg(api);
    // Locally each invocation's metrics are a DEBUG `metrics` line (docs/deploy.md#the-platforms-metrics); why, the warning beside.
    const debug = vi.spyOn(logger, 'debug');
    const warnings = vi.spyOn(logger, 'warn');
    const noSender = JSON.parse(JSON.stringify(fixtures.notifications.textMessageFromBusinessScopedUser));
    const value = noSender.entry[0].changes[0].value;
    value.metadata.phone_number_id = org.phoneNumberId;
    delete value.contacts;
    delete value.messages[0].from_user_id;
    value.messages[0].timestamp = String(Math.floor(Date.now() / 1000));
    const otherField = { object: 'whatsapp_business_account', entry: [{ id: '102290129340398', changes: [{ field: 'account_update', value: { phone_number: '15550783881', event: 'VERIFIED_ACCOUNT' } }] }] };

    // Act
    const posted = [];
    for (const notification of [noSender, otherField]) {
      const body = escapeUnicode(JSON.stringify(notification));
      posted.push(await simulator().post(org.phoneNumberId, body, simulator().sign(org.phoneNumberId, body)));
    }
    const counted = debug.mock.calls
      .filter(([message]) => message === 'metrics')
      .map(([, fields]) => (fields as { emf: Record<string, unknown> }).emf.WhatsappNotificationsUnhandled)
      .filter((count) => count !== undefined);
    const reasons = warnings.mock.calls.filter(([message]) => String(message).startsWith('WhatsApp notification acknowledged, not handled')).map(([, fields]) => fields);
    debug.mockRestore();
    warnings.mockRestore();

    // Assess
    expect(posted.map((notification) => notification.status)).toEqual([200, 200]);
    expect(counted).toEqual([1, 1]);
    expect(reasons).toEqual([
      expect.objectContaining({ reason: 'message names no sender', numberId: org.numberId, wamid: value.messages[0].id }),
      expect.objectContaining({ reason: 'field not handled', field: 'account_update' }),
    ]);
    expect(await sessionsOf(org)).toEqual([]);
  });
});
