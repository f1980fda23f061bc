/**
 * Session lists read one page from where the last one ended (nextCursor) and take their totals from counters:
 * pages and totals must match what the sessions are, whatever the filters, order, page size and inserts meanwhile.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';

/** Long enough that no session of a property run goes idle before it is listed, however busy the machine. */
const idleSeconds = 30;
let api: TestApi;
beforeAll(async () => {
  api = await startApi({ SESSION_IDLE_TIMEOUT_SECONDS: String(idleSeconds) });
});
afterAll(() => api.close());

const platforms = ['SDK', 'WEB', 'WHATSAPP', 'VOICE'] as const;

interface Known {
  id: string;
  agentId: string;
  platform: string;
  state: 'OPEN' | 'CLOSED';
  createdAt: string;
}

interface ListFilter {
  agentId?: string | undefined;
  state?: 'OPEN' | 'CLOSED' | 'EXPIRED' | undefined;
  platform?: string | undefined;
  createdAfter?: string | undefined;
  direction: 'asc' | 'desc';
  limit: number;
}

async function newAgent(key: string): Promise<string> {
  return (await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'A', description: 'A', role: 'A' } })).body.id;
}

async function open(key: string, agentId: string, platform: string = 'SDK'): Promise<Known> {
  const created = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId, platform } });
  expect(created.status).toBe(201);
  return { id: created.body.id, agentId, platform, state: 'OPEN', createdAt: created.body.createdAt };
}

function queryOf(filter: ListFilter, extra: Record<string, string> = {}): string {
  const parameters = new URLSearchParams({ sort: `createdAt:${filter.direction}`, limit: String(filter.limit), ...extra });
  for (const name of ['agentId', 'state', 'platform', 'createdAfter'] as const) {
    const value = filter[name];
    if (value !== undefined) parameters.set(name, value);
  }
  return `/v1/chat/chat/sessions?${parameters}`;
}

/** Every page of the listing, following nextCursor from page 1. */
async function walk(key: string, filter: ListFilter) {
  const pages: { ids: string[]; pagination: Record<string, unknown> }[] = [];
  let cursor: string | undefined;
  do {
    const response = await api.request('GET', queryOf(filter, cursor ? { cursor } : {}), { key });
    expect(response.status).toBe(200);
    pages.push({ ids: response.body.data.map((session: { id: string }) => session.id), pagination: response.body.pagination });
    cursor = response.body.pagination.nextCursor;
  } while (cursor && pages.length < 100);
  return pages;
}

/** What the listing must show: the sessions matching the filter in sort-key order (`<createdAt>#<id>`). */
function expected(known: readonly Known[], filter: ListFilter): string[] {
  const matching = known
    .filter((session) => (filter.agentId === undefined || session.agentId === filter.agentId))
    .filter((session) => (filter.state === undefined || session.state === filter.state))
    .filter((session) => (filter.platform === undefined || session.platform === filter.platform))
    .filter((session) => (filter.createdAfter === undefined || session.createdAt > filter.createdAfter))
    .map((session) => `${session.createdAt}#${session.id}`)
    .sort();
  if (filter.direction === 'desc') matching.reverse();
  return matching.map((position) => position.slice(position.indexOf('#') + 1));
}

/** `usually` two times in three, else a value of `other`: filters mostly left out, so that listings are long. */
function often<T, U>(usually: T, other: fc.Arbitrary<U>): fc.Arbitrary<T | U> {
  return fc.oneof({ arbitrary: fc.constant(usually), weight: 2 }, { arbitrary: other, weight: 1 });
}

describe('GET /v1/chat/chat/sessions, page by page', () => {
  it('shows each matching session once, in order, with the right totals, for any sessions and filters', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ agent: fc.nat(1), platform: fc.constantFrom(...platforms.slice(0, 2)), close: fc.boolean() }), { maxLength: 12 }),
        fc.array(
          fc.record({
            agent: often(undefined, fc.nat(1)),
            state: often(undefined, fc.constantFrom('OPEN' as const, 'CLOSED' as const)),
            platform: often(undefined, fc.constantFrom(...platforms)),
            after: often(undefined, fc.nat(11)),
            direction: fc.constantFrom('asc' as const, 'desc' as const),
            limit: fc.integer({ min: 1, max: 4 }),
          }),
          { minLength: 1, maxLength: 3 },
        ),
        async (plan, filters) => {
          // Prepare
          const { key } = await api.newOrg();
          const agents = [await newAgent(key), await newAgent(key)];
          const known: Known[] = [];
          for (const step of plan) {
            const session = await open(key, agents[step.agent] as string, step.platform);
            if (step.close) {
              expect((await api.request('PATCH', `/v1/chat/chat/sessions/${session.id}/close`, { key })).status).toBe(200);
              session.state = 'CLOSED';
            }
            known.push(session);
          }

          for (const chosen of filters) {
            const filter: ListFilter = {
              agentId: chosen.agent === undefined ? undefined : agents[chosen.agent],
              state: chosen.state,
              platform: chosen.platform,
              createdAfter: chosen.after === undefined ? undefined : known[chosen.after]?.createdAt,
              direction: chosen.direction,
              limit: chosen.limit,
            };
            const want = expected(known, filter);

            // Act
            const pages = await walk(key, filter);

            // Assess
            expect(pages.flatMap((page) => page.ids)).toEqual(want);
            pages.forEach((page, index) => {
              expect(page.pagination).toMatchObject({ page: index + 1, limit: filter.limit, total: want.length, totalPages: Math.ceil(want.length / filter.limit) });
              expect(page.ids.length).toBe(index < pages.length - 1 ? filter.limit : want.length - index * filter.limit);
            });
            // A page asked for by number is the page the cursors lead to.
            const last = pages.length;
            const byNumber = await api.request('GET', queryOf(filter, { page: String(last) }), { key });
            expect(byNumber.body.data.map((session: { id: string }) => session.id)).toEqual(pages[last - 1]?.ids);
          }
        },
      ),
      { numRuns: 20 },
    );
  });

  it('neither repeats nor skips a session when sessions are opened between pages', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const agentId = await newAgent(key);
    const before: Known[] = [];
    for (let index = 0; index < 7; index += 1) before.push(await open(key, agentId));
    const newestFirst = { direction: 'desc' as const, limit: 3 };
    const oldestFirst = { direction: 'asc' as const, limit: 3 };
    const first = await api.request('GET', queryOf(newestFirst), { key });
    const firstAscending = await api.request('GET', queryOf(oldestFirst), { key });

    // Act
    const during: Known[] = [];
    for (let index = 0; index < 4; index += 1) during.push(await open(key, agentId));
    const rest = async (page: typeof first, filter: ListFilter) => {
      const ids: string[] = page.body.data.map((session: { id: string }) => session.id);
      let cursor: string | undefined = page.body.pagination.nextCursor;
      while (cursor) {
        const next = await api.request('GET', queryOf(filter, { cursor }), { key });
        ids.push(...next.body.data.map((session: { id: string }) => session.id));
        cursor = next.body.pagination.nextCursor;
      }
      return ids;
    };

    // Assess
    expect(await rest(first, newestFirst)).toEqual(expected(before, newestFirst));
    expect(await rest(firstAscending, oldestFirst)).toEqual(expected([...before, ...during], oldestFirst));
    const now = await api.request('GET', queryOf(newestFirst), { key });
    expect(now.body.pagination.total).toBe(11);
  });

  it('shows idle sessions as EXPIRED in pages and totals before anything marks them so', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const agentId = await newAgent(key);
    const idle = [await open(key, agentId, 'WEB'), await open(key, agentId)];
    const closed = await open(key, agentId);
    await api.request('PATCH', `/v1/chat/chat/sessions/${closed.id}/close`, { key });
    await new Promise((resolve) => setTimeout(resolve, idleSeconds * 1000 + 300));
    const fresh = await open(key, agentId);
    const listed = async (query: string) => {
      const response = await api.request('GET', `/v1/chat/chat/sessions?${query}`, { key });
      return { ids: response.body.data.map((session: { id: string }) => session.id), total: response.body.pagination.total };
    };

    // Act
    const [expired, openNow, closedNow, all, expiredWeb] = await Promise.all([
      listed('state=EXPIRED'),
      listed('state=OPEN'),
      listed('state=CLOSED'),
      listed(''),
      listed(`state=EXPIRED&platform=WEB&agentId=${agentId}`),
    ]);

    // Assess
    expect(expired).toEqual({ ids: [idle[1]?.id, idle[0]?.id], total: 2 });
    expect(openNow).toEqual({ ids: [fresh.id], total: 1 });
    expect(closedNow).toEqual({ ids: [closed.id], total: 1 });
    expect(all.total).toBe(4);
    expect(expiredWeb).toEqual({ ids: [idle[0]?.id], total: 1 });
  });

  it('answers 400 naming cursor for a cursor that is not a nextCursor of the same listing', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const agentId = await newAgent(key);
    for (let index = 0; index < 3; index += 1) await open(key, agentId);
    const page = await api.request('GET', '/v1/chat/chat/sessions?limit=1', { key });
    const cursor = page.body.pagination.nextCursor as string;
    const forged = Buffer.from(JSON.stringify({ after: 'ORG#other', page: 2, listing: JSON.parse(Buffer.from(cursor, 'base64url').toString()).listing })).toString('base64url');

    // Act
    const answers = await Promise.all(
      [`limit=1&state=OPEN&cursor=${cursor}`, `limit=1&sort=createdAt:asc&cursor=${cursor}`, 'cursor=not-a-cursor', `limit=1&cursor=${forged}`].map((query) =>
        api.request('GET', `/v1/chat/chat/sessions?${query}`, { key }),
      ),
    );

    // Assess
    for (const answer of answers) {
      expect(answer.status).toBe(400);
      expect(answer.body.error.details).toEqual([expect.objectContaining({ field: 'cursor' })]);
    }
  });
});
