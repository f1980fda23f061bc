import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { startApi, type TestApi } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startApi({ SESSION_IDLE_TIMEOUT_SECONDS: '1' }, { ttlSweepIntervalMs: 200 });
});
afterAll(() => api.close());

describe('durable expiry through TTL deletions', () => {
  it('expires an abandoned session, records its end and queues its analysis once, without anyone reading it', async () => {
    const { orgId, key } = await api.newOrg();
    const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'A', description: 'A', role: 'A' } });
    const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } });
    const [{ runtime }, { createDocumentClient }] = await Promise.all([import('../../shared/runtime.ts'), import('../../shared/platform/store/dynamo.ts')]);
    const deps = runtime();
    // The TTL attribute has second precision: give the sweep time to see the item as lapsed.
    const stored = await eventually(() => deps.sessions.get(orgId, session.body.id), (found) => found?.state !== 'OPEN');
    expect(stored).toMatchObject({ state: 'EXPIRED', endedReason: 'EXPIRED' });
    const outbox = await createDocumentClient(deps.config).send(
      new QueryCommand({
        TableName: deps.config.TABLE_NAME,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': `ORG#${orgId}#SES#${session.body.id}` },
      }),
    );
    const items = outbox.Items ?? [];
    const types = items.filter((item) => item.entity === 'outbox').map((item) => item.type as string).sort();
    // `session.ended` follows from the analysis job (test/analysis/session-analysis.test.ts).
    expect(types).toEqual(['session.created', 'session.updated']);
    expect(items.filter((item) => item.entity === 'analysisJob')).toEqual([
      expect.objectContaining({ purpose: 'initial', sessionId: session.body.id, deadlineFrom: stored?.updatedAt }),
    ]);
  });
});
