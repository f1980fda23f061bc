/**
 * Analytics on the local runtime: the aggregates the stream consumer keeps must equal a count taken from the
 * sessions and messages themselves, replays must not change them, and the per-agent view has a CSV form.
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler } from '../../functions/analytics-aggregate/handler.ts';
import { runtime } from '../../shared/runtime.ts';
import { analyticsResponse, type AnalyticsResponse } from '../../shared/billing/analytics-schemas.ts';
import { startApi, type TestApi } from '../support/api.ts';
import { insertRecords } from '../support/database.ts';
import { eventually } from '../support/eventually.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startApi({}, { streamPoller: true, queues: true });
});
afterAll(() => api.close());

async function overview(key: string, query = ''): Promise<AnalyticsResponse> {
  const response = await api.request('GET', `/v1/chat/analytics/overview${query}`, { key });
  expect(response.status, response.text).toBe(200);
  return analyticsResponse.parse(response.body);
}

describe('analytics', () => {
  it('totals equal what the sessions and messages themselves show, and a replayed batch changes nothing', async () => {
    // Prepare: three sessions of two agents, 2, 1 and 0 turns, two of them closed.
    const { key, orgId } = await api.newOrg();
    const agents = await Promise.all(
      ['One', 'Two'].map(async (name) => (await api.request('POST', '/v2/chat/agents', { key, body: { fullName: name, description: 'a', role: 'Helpful' } })).body.id as string),
    );
    const plan = [
      { agentId: agents[0], platform: 'SDK', turns: 2, close: true },
      { agentId: agents[0], platform: 'WEB', turns: 1, close: true },
      { agentId: agents[1], platform: 'SDK', turns: 0, close: false },
    ];
    const sessionIds: string[] = [];
    for (const step of plan) {
      const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: step.agentId, platform: step.platform } });
      sessionIds.push(session.body.id);
      for (let turn = 0; turn < step.turns; turn += 1) {
        expect((await api.request('POST', `/v1/chat/chat/sessions/${session.body.id}/messages`, { key, body: { content: 'hi', stream: false } })).status).toBe(200);
      }
      if (step.close) await api.request('PATCH', `/v1/chat/chat/sessions/${session.body.id}/close`, { key });
    }
    const histories = await Promise.all(sessionIds.map((id) => api.request('GET', `/api/v1/chat/sessions/${id}/messages?limit=100`, { key })));
    const messageTotals = histories.map((history) => history.body.pagination.total as number);
    const assistantReplies = histories.flatMap((history) => history.body.data).filter((message: { role: string }) => message.role === 'ASSISTANT').length;

    // Act
    // The counters come through the table stream, behind the other consumers' work: minutes on a busy machine.
    const report = await eventually(
      () => overview(key),
      (result) => result.totals.sessions.total === 3 && result.totals.sessions.ended === 2 && result.totals.messages === messageTotals.reduce((a, b) => a + b, 0),
      150_000,
    );
    const replayed = await replay(orgId, sessionIds[0] as string);
    const afterReplay = await overview(key);

    // Assess
    const { totals } = report;
    expect(totals.sessions).toEqual({
      total: 3,
      ended: 2,
      byType: { CHAT: 3 },
      byPlatform: { SDK: 2, WEB: 1 },
      byState: { CLOSED: 2 },
      byEndedReason: { USER_CLOSED: 2 },
    });
    expect(totals.messagesPerSession.mean).toBe((messageTotals[0]! + messageTotals[1]!) / 2);
    expect(totals.timings.modelFirstTokenMs?.count).toBe(assistantReplies);
    expect(totals.timings.platformMs?.count).toBe(assistantReplies);
    expect(totals.durationSeconds?.count).toBe(2);
    expect(totals.tools).toEqual({ calls: 0, errors: 0, errorRate: null });
    expect(report.series.reduce((sum, point) => sum + point.sessions, 0)).toBe(3);
    expect(replayed.batchItemFailures).toEqual([]);
    expect(afterReplay.totals).toEqual(totals);
  }, 180_000);

  it('shows one agent, as JSON or as CSV, and by hour', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const agentId = (await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'Solo', description: 'a', role: 'Helpful' } })).body.id as string;
    const other = (await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'Other', description: 'a', role: 'Helpful' } })).body.id as string;
    await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId } });
    await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: other } });
    await eventually(() => overview(key), (result) => result.totals.sessions.total === 2);

    // Act
    const json = await api.request('GET', `/v1/chat/analytics/agents/${agentId}`, { key });
    const csv = await api.request('GET', `/v1/chat/analytics/agents/${agentId}?granularity=hour`, { key, headers: { accept: 'text/csv' } });
    const byHour = await overview(key, `?granularity=hour&agentId=${other}`);
    const unknownAgent = await api.request('GET', `/v1/chat/analytics/agents/${crypto.randomUUID()}`, { key });
    const badRange = await api.request('GET', '/v1/chat/analytics/overview?granularity=hour&from=2020-01-01T00:00:00Z', { key });

    // Assess
    expect(analyticsResponse.parse(json.body).totals.sessions.total).toBe(1);
    expect(json.body.agentId).toBe(agentId);
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-type')).toMatch(/^text\/csv/);
    const rows = csv.text.trim().split('\r\n');
    expect(rows[0]).toBe('start,end,sessions,ended,messages,toolCalls,toolErrors,voiceMinutes');
    expect(rows).toHaveLength(49 + 1);
    expect(rows.slice(1).reduce((sum, row) => sum + Number(row.split(',')[2]), 0)).toBe(1);
    expect(byHour.series).toHaveLength(49);
    expect(byHour.totals.sessions.total).toBe(1);
    expect(unknownAgent.body.totals.sessions.total).toBe(0);
    expect(badRange.status).toBe(400);
  });
});

/** Hands the session's message and outbox records to the consumer again, as a retried stream batch would. */
async function replay(orgId: string, sessionId: string) {
  const deps = runtime();
  const page = await deps.documentClient.send(
    new QueryCommand({ TableName: deps.config.TABLE_NAME, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': `ORG#${orgId}#SES#${sessionId}` } }),
  );
  return handler({ Records: insertRecords(page.Items ?? []) });
}
