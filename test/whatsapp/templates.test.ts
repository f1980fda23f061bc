import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, startApi, type TestApi } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';
import { customerSessions, messagesOf, repliesTo, uniqueCustomer, uniqueUserId, whatsappOrg, type WhatsappOrg } from '../support/whatsapp.ts';

let api: TestApi;

beforeAll(async () => {
  api = await startApi({ WHATSAPP_SEND_RETRY_MS: '10,20,30' }, { queues: { visibilityTimeoutSeconds: 2 }, whatsapp: true });
  // Loads the agents' and numbers' handlers (a cold start takes 20 s on a busy machine) outside the tests' time limit.
  await whatsappOrg(api);
});
afterAll(() => api.close());

const simulator = () => api.whatsapp!;
const echo = (text: string) => `You said: "${text}". I am the built-in offline model; connect a provider model for real answers.`;

const orderUpdate = {
  name: 'order_update',
  language: { code: 'en_US' },
  components: [{ type: 'body', parameters: [{ type: 'text', text: '{{customerName}}' }, { type: 'text', text: '{{orderId}}' }] }],
};

function start(org: WhatsappOrg, body: unknown, headers?: Record<string, string>) {
  return api.request('POST', `/v1/chat/whatsapp/numbers/${org.numberId}/conversations`, { key: org.key, body, ...(headers ? { headers } : {}) });
}

describe('starting a WhatsApp conversation with a template', () => {
  it("sends the approved template with its parameters from the session variables; the customer's reply continues the session with the agent", async () => {
    const org = await whatsappOrg(api);
    const customer = uniqueCustomer();

    const started = await start(org, { to: `+${customer}`, template: orderUpdate, sessionVariables: { customerName: 'Ana', orderId: 'A-1001', tier: 'gold' } });

    expect(started.status, started.text).toBe(201);
    expect(started.body).toEqual({ sessionId: expect.any(String), wamid: expect.stringMatching(/^wamid\./), to: customer });
    const [template] = simulator().sent.filter((message) => message.to === customer);
    expect(template).toMatchObject({
      type: 'template',
      body: 'Hi Ana, your order A-1001 has shipped.',
      template: { name: 'order_update', language: { code: 'en_US' }, components: [{ type: 'body', parameters: [{ type: 'text', text: 'Ana' }, { type: 'text', text: 'A-1001' }] }] },
      wamid: started.body.wamid,
    });
    const session = (await api.request('GET', `/api/v1/chat/sessions/${started.body.sessionId}`, { key: org.key })).body;
    expect(session).toMatchObject({
      type: 'CHAT',
      platform: 'WHATSAPP',
      direction: 'OUTBOUND',
      state: 'OPEN',
      agentId: org.agentId,
      metadata: { sessionVariables: { customerName: 'Ana', orderId: 'A-1001', tier: 'gold' }, whatsapp: { numberId: org.numberId, phoneNumberId: org.phoneNumberId, customerWaId: customer } },
    });
    // Meta's statuses of the template reach its message.
    const [sent] = await eventually(() => messagesOf(api, org, session.id), (found) => found[0]?.metadata.whatsapp.sends[0].status === 'delivered');
    expect(sent).toMatchObject({ role: 'ASSISTANT', content: '[template order_update (en_US): Ana, A-1001]', metadata: { whatsapp: { template: { name: 'order_update' } } } });

    await simulator().customerSays({ phoneNumberId: org.phoneNumberId, from: customer, text: 'Where is it now?' });
    expect(await repliesTo(simulator(), org, customer, 2)).toEqual(['Hi Ana, your order A-1001 has shipped.', echo('Where is it now?')]);
    const sessions = await customerSessions(api, org, customer);
    expect(sessions.map((candidate) => candidate.id)).toEqual([session.id]);
    const transcript = await eventually(() => messagesOf(api, org, session.id), (found) => found.length === 3);
    expect(transcript.map((message) => [message.role, message.content])).toEqual([
      ['ASSISTANT', '[template order_update (en_US): Ana, A-1001]'],
      ['USER', 'Where is it now?'],
      ['ASSISTANT', echo('Where is it now?')],
    ]);
  });

  it("continues the template's session when the reply names the customer's business-scoped user id beside their number, though they had a session under it", async () => {
    const org = await whatsappOrg(api);
    const customer = uniqueCustomer();
    const userId = uniqueUserId();
    // The customer wrote before: Meta named them by both ids, and their session is keyed by the BSUID.
    await simulator().customerSays({ phoneNumberId: org.phoneNumberId, from: customer, userId, text: 'Is my order ready?' });
    await repliesTo(simulator(), org, customer, 1);
    const [earlier] = await eventually(() => customerSessions(api, org, customer), (found) => found.length === 1);

    const started = await start(org, { to: customer, template: orderUpdate, sessionVariables: { customerName: 'Ana', orderId: 'A-1002' } });
    expect(started.status, started.text).toBe(201);
    await simulator().customerSays({ phoneNumberId: org.phoneNumberId, from: customer, userId, text: 'Thanks, when does it arrive?' });
    await simulator().customerSays({ phoneNumberId: org.phoneNumberId, from: customer, userId, text: 'And can I change the address?' });

    expect(await repliesTo(simulator(), org, customer, 4)).toEqual([
      echo('Is my order ready?'),
      'Hi Ana, your order A-1002 has shipped.',
      echo('Thanks, when does it arrive?'),
      echo('And can I change the address?'),
    ]);
    expect(simulator().sent.filter((message) => message.to === customer).map((message) => message.addressedBy)).toEqual(['to', 'to', 'to', 'to']);
    const transcript = await eventually(() => messagesOf(api, org, started.body.sessionId), (found) => found.length === 5);
    expect(transcript.map((message) => message.content)).toEqual([
      '[template order_update (en_US): Ana, A-1002]',
      'Thanks, when does it arrive?',
      echo('Thanks, when does it arrive?'),
      'And can I change the address?',
      echo('And can I change the address?'),
    ]);
    expect((await messagesOf(api, org, earlier.id)).map((message) => message.content)).toEqual(['Is my order ready?', echo('Is my order ready?')]);
  });

  it('fills a named parameter without text from the session variable of its name, and answers with another agent when asked', async () => {
    const org = await whatsappOrg(api);
    const other = await api.request('POST', '/v2/chat/agents', { key: org.key, body: { fullName: 'Rita', description: 'Reminders', role: 'You remind customers of appointments.' } });
    const customer = uniqueCustomer();
    const template = {
      name: 'appointment_reminder',
      language: { code: 'en_US' },
      components: [{ type: 'body', parameters: [{ type: 'text', parameter_name: 'first_name' }, { type: 'text', parameter_name: 'date', text: 'Friday {{day}}' }] }],
    };

    const started = await start(org, { to: customer, template, sessionVariables: { first_name: 'Jo', day: 12 }, agentId: other.body.id });

    expect(started.status, started.text).toBe(201);
    expect(simulator().sent.find((message) => message.wamid === started.body.wamid)?.body).toBe('Hello Jo, see you on Friday 12. Reply to this message to change it.');
    expect((await api.request('GET', `/api/v1/chat/sessions/${started.body.sessionId}`, { key: org.key })).body.agentId).toBe(other.body.id);
  });

  it('refuses a variable the request does not give with 400 naming the parameter, before sending anything', async () => {
    const org = await whatsappOrg(api);
    const customer = uniqueCustomer();
    const named = { name: 'appointment_reminder', language: { code: 'en_US' }, components: [{ type: 'body', parameters: [{ type: 'text', parameter_name: 'first_name' }, { type: 'text', text: 'x' }] }] };

    const missing = await start(org, { to: customer, template: orderUpdate, sessionVariables: { customerName: 'Ana' } });
    const missingNamed = await start(org, { to: customer, template: named });
    const malformed = await start(org, { to: 'call me', template: { name: 'Order Update', language: { code: 'english' } } });

    expectError(missing, 400, 'VALIDATION_ERROR', 'template.components[0].parameters[1].text');
    expect(missing.body.error.details[0].message).toBe('names {{orderId}}, which sessionVariables does not have');
    expectError(missingNamed, 400, 'VALIDATION_ERROR', 'template.components[0].parameters[0].parameter_name');
    expectError(malformed, 400, 'VALIDATION_ERROR', 'to');
    expect(malformed.body.error.details.map((detail: { field: string }) => detail.field)).toEqual(expect.arrayContaining(['template.name', 'template.language.code']));
    expect(simulator().attempts.filter((attempt) => attempt.to.includes(customer))).toEqual([]);
  });

  it("answers Meta's refusal of the template with 422 WHATSAPP_TEMPLATE_REJECTED and keeps nothing of it", async () => {
    const org = await whatsappOrg(api);
    const customer = uniqueCustomer();

    const unknown = await start(org, { to: customer, template: { ...orderUpdate, name: 'order_updates' }, sessionVariables: { customerName: 'Ana', orderId: '1' } });
    const wrongCount = await start(org, { to: customer, template: { name: 'hello_world', language: { code: 'en_US' }, components: orderUpdate.components }, sessionVariables: { customerName: 'Ana', orderId: '1' } });
    const wrongLanguage = await start(org, { to: customer, template: { name: 'hello_world', language: { code: 'pt_BR' } } });

    expectError(unknown, 422, 'WHATSAPP_TEMPLATE_REJECTED');
    expect(unknown.body.error.message).toContain('(#132001) Template name does not exist in the translation (template name (order_updates) does not exist in en_US)');
    expectError(wrongCount, 422, 'WHATSAPP_TEMPLATE_REJECTED');
    expect(wrongCount.body.error.message).toContain('132000');
    expectError(wrongLanguage, 422, 'WHATSAPP_TEMPLATE_REJECTED');
    expect(await customerSessions(api, org, customer)).toEqual([]);
    expect(simulator().attempts.filter((attempt) => attempt.to === customer).map((attempt) => attempt.status)).toEqual([400, 400, 400]);
  });

  it("answers a token Meta refuses with 422 WHATSAPP_CREDENTIALS_REJECTED, and Meta's outage after the retries with 502 WHATSAPP_UNAVAILABLE", async () => {
    const org = await whatsappOrg(api);
    const customer = uniqueCustomer();
    simulator().failNextSends(org.phoneNumberId, 4, 503);
    const unavailable = await start(org, { to: customer, template: { name: 'hello_world', language: { code: 'en_US' } } });
    await api.request('PATCH', `/v1/chat/whatsapp/numbers/${org.numberId}`, { key: org.key, body: { accessToken: 'EAA-a-token-meta-never-issued' } });
    const rejected = await start(org, { to: customer, template: { name: 'hello_world', language: { code: 'en_US' } } });

    expectError(unavailable, 502, 'WHATSAPP_UNAVAILABLE');
    expectError(rejected, 422, 'WHATSAPP_CREDENTIALS_REJECTED');
    expect(simulator().attempts.filter((attempt) => attempt.to === customer).map((attempt) => attempt.status)).toEqual([503, 503, 503, 503, 401]);
  });

  it('sends once for a retried request with the same Idempotency-Key', async () => {
    const org = await whatsappOrg(api);
    const customer = uniqueCustomer();
    const body = { to: customer, template: { name: 'hello_world', language: { code: 'en_US' } } };
    const headers = { 'idempotency-key': `start-${customer}` };

    const first = await start(org, body, headers);
    const again = await start(org, body, headers);

    expect(first.status, first.text).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(simulator().sent.filter((message) => message.to === customer)).toHaveLength(1);
  });

  it("keeps other organizations and short scopes out: another's number is 404, channels:read is 403", async () => {
    const org = await whatsappOrg(api);
    const stranger = await whatsappOrg(api);
    const reader = await api.newKey(org.orgId, ['channels:read']);
    const body = { to: uniqueCustomer(), template: { name: 'hello_world', language: { code: 'en_US' } } };

    expectError(await api.request('POST', `/v1/chat/whatsapp/numbers/${org.numberId}/conversations`, { key: stranger.key, body }), 404, 'NOT_FOUND');
    expectError(await api.request('POST', `/v1/chat/whatsapp/numbers/${org.numberId}/conversations`, { key: reader, body }), 403, 'FORBIDDEN');
    expectError(await start(org, { ...body, agentId: stranger.agentId }), 404, 'NOT_FOUND');
  });

  it('refuses free-form replies to a customer who has not answered the template: only the template is sent', async () => {
    const org = await whatsappOrg(api);
    const customer = uniqueCustomer();
    const started = await start(org, { to: customer, template: { name: 'hello_world', language: { code: 'en_US' } } });
    expect(started.status, started.text).toBe(201);
    // The customer answers a day and a half later (Meta delivers late): the window their message opened is already past.
    await simulator().customerSays({ phoneNumberId: org.phoneNumberId, from: customer, text: 'Hi, who is this?', timestamp: Math.floor(Date.now() / 1000) - 36 * 60 * 60 });
    const transcript = await eventually(() => messagesOf(api, org, started.body.sessionId), (found) => Boolean(found[2]?.metadata.whatsapp?.sends));
    expect(transcript[2].metadata.whatsapp.sends).toEqual([expect.objectContaining({ status: 'refused', attempts: 0, error: expect.objectContaining({ code: 'WHATSAPP_WINDOW_CLOSED', message: expect.stringContaining('template messages') }) })]);
    expect(simulator().attempts.filter((attempt) => attempt.to === customer).map((attempt) => attempt.type)).toEqual(['template']);
  });
});

describe("a MANUAL agent's conversations", () => {
  it('bind to the version published when they open, started by a template or by the customer, not to the draft', async () => {
    // Prepare: the number's agent switched to MANUAL (version 2, a draft), version 1 published
    const org = await whatsappOrg(api);
    const draft = await api.request('PATCH', `/v2/chat/agents/${org.agentId}`, { key: org.key, body: { publishMode: 'MANUAL' } });
    expect(draft.body).toMatchObject({ draftVersion: 2, publishedVersion: 1 });
    const [outbound, inbound] = [uniqueCustomer(), uniqueCustomer()];

    // Act
    const started = await start(org, { to: `+${outbound}`, template: orderUpdate, sessionVariables: { customerName: 'Ana', orderId: 'A-1001' } });
    await simulator().customerSays({ phoneNumberId: org.phoneNumberId, from: inbound, text: 'Hello' });
    await repliesTo(simulator(), org, inbound, 1);

    // Assess
    expect(started.status, started.text).toBe(201);
    const opened = (await api.request('GET', `/api/v1/chat/sessions/${started.body.sessionId}`, { key: org.key })).body;
    const [answered] = await customerSessions(api, org, inbound);
    expect([opened.agentVersion, answered.agentVersion]).toEqual([1, 1]);
  });
});
