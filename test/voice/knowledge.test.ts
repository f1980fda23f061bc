import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';
import { Receiver } from '../support/webhook-receiver.ts';
import { sessionEvents, voiceOrg } from '../support/voice.ts';

let api: TestApi;
const receiver = new Receiver();
let receiverUrl: string;

beforeAll(async () => {
  receiverUrl = await receiver.start();
  api = await startApi({ KNOWLEDGE_VECTOR_DIR: mkdtempSync(join(tmpdir(), 'vectors-')) }, { streamPoller: true, queues: true, voice: true });
});
afterAll(async () => {
  await api.close();
  await receiver.close();
});

const openingHours = `# Opening hours

## Shop
The shop on Main Street is open Tuesday to Saturday, 10:00 to 18:30.

## Phone line
The phone line answers Monday to Friday, 8:00 to 20:00.`;

describe('knowledge in a call', () => {
  it('grounds a voice turn in the agent’s store: the spoken answer comes from the chunk, cited on the assistant message', async () => {
    const org = await voiceOrg(api, receiver, receiverUrl);
    const { key } = org;
    const store = (await api.request('POST', '/v1/chat/knowledge-stores', { key, body: { name: 'Shop facts', config: { topK: 1 } } })).body;
    const document = (await api.request('POST', `/v1/chat/knowledge-stores/${store.id}/documents`, { key, body: { name: 'Opening hours', text: openingHours } })).body;
    await eventually(async () => (await api.request('GET', `/v1/chat/knowledge-stores/${store.id}/documents/${document.id}`, { key })).body.status, (status) => status === 'UPSERTED');

    const attached = await api.request('PATCH', `/v2/chat/agents/${org.agentId}`, { key, body: { knowledgeStoreId: store.id } });
    expect(attached.status, attached.text).toBe(200);
    const to = '+15550146';
    api.voice!.simulator.setScript(to, { steps: [{ say: 'When is the shop on Main Street open?' }], then: 'hangup' });
    const started = await api.request('POST', `/api/v1/phone-numbers/${org.phoneNumberId}/calls/start`, { key: org.key, body: { to_phone_number: to, agent_id: org.agentId } });
    expect(started.status, started.text).toBe(201);
    const sessionId = started.body.sessionId;
    await sessionEvents(receiver, org.webhookPath, sessionId);

    const messages = (await api.request('GET', `/api/v1/chat/sessions/${sessionId}/messages?limit=50`, { key: org.key })).body.data;
    const reply = messages.find((message: any) => message.role === 'ASSISTANT');
    expect(reply.metadata.citations).toEqual([{ documentId: document.id, documentName: 'Opening hours', chunkId: `doc#${document.id}#v1#0`, score: expect.any(Number) }]);
    expect(reply.metadata.timings.retrieval).toEqual(expect.any(Number));
    expect(reply.content).toContain('Tuesday to Saturday, 10:00 to 18:30');
    // What the caller heard is the grounded answer.
    const roomName = (await api.request('GET', `/api/v1/chat/sessions/${sessionId}`, { key: org.key })).body.metadata.roomName;
    expect(api.voice!.simulator.heard(roomName).join(' ')).toContain('Tuesday to Saturday');
  });
});
