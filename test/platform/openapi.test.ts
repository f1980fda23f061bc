/**
 * /openapi.json, /docs and the typed client: the description is valid OpenAPI 3.1, documents every public route
 * with a response schema and nothing internal, and the contract check that every integration test goes through
 * (test/support/contract.ts) does refuse what the description does not allow.
 */
import { readFileSync } from 'node:fs';
import { get, type IncomingHttpHeaders } from 'node:http';
import { resolve } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientTypes, schemaFile } from '../../clients/typescript/generate.ts';
import { createApiClient } from '../../clients/typescript/index.ts';
import { routeGroups } from '../../functions/route-groups.ts';
import { apiVersion, errorCodesOf } from '../../shared/platform/http/openapi.ts';
import { startApi, type TestApi } from '../support/api.ts';
import { assertDocumentedResponse } from '../support/contract.ts';

const repoRoot = resolve(import.meta.dirname, '../..');
let api: TestApi;
beforeAll(async () => {
  api = await startApi({ EVENT_STREAM_POLL_MS: '50' }, { streamPoller: true });
});
afterAll(() => api.close());

type OpenApiDocument = {
  openapi: string;
  info: { version: string; description: string };
  paths: Record<string, Record<string, { 'x-required-scope'?: string; security: unknown[]; responses: Record<string, { content?: Record<string, unknown> }> }>>;
};

async function fetchDocument(): Promise<{ response: Response; document: OpenApiDocument }> {
  const response = await fetch(`${api.baseUrl}/openapi.json`);
  return { response, document: (await response.json()) as OpenApiDocument };
}

const allRoutes = routeGroups.flatMap((group) => Object.entries(group.routes).map(([operation, route]) => ({ operation, route })));

describe('GET /openapi.json', () => {
  it('is a valid OpenAPI 3.1 document, public and cacheable, at the changelog version', async () => {
    const { response, document } = await fetchDocument();
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(response.headers.get('cache-control')).toBe('public, max-age=300');
    expect(document.openapi).toMatch(/^3\.1\./);
    const result = await new Validator().validate(document as never);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    const latestRelease = /^## \[(\d+\.\d+\.\d+)\]/m.exec(readFileSync(resolve(repoRoot, 'CHANGELOG.md'), 'utf8'))?.[1];
    expect(document.info.version).toBe(latestRelease);
    expect(apiVersion).toBe(latestRelease);
  });

  it('answers the same bytes every time, and 304 to a client whose copy is current', async () => {
    const first = await fetch(`${api.baseUrl}/openapi.json`);
    const second = await fetch(`${api.baseUrl}/openapi.json`);
    expect(await first.text()).toBe(await second.text());
    expect(first.headers.get('etag')).toMatch(/^"[\w-]{22}"$/);
    expect(second.headers.get('etag')).toBe(first.headers.get('etag'));
    const revalidated = await fetch(`${api.baseUrl}/openapi.json`, { headers: { 'if-none-match': first.headers.get('etag') as string } });
    expect(revalidated.status).toBe(304);
    expect(await revalidated.text()).toBe('');
  });

  it('documents every route that is not internal, with its scope, and none that is', async () => {
    const { document } = await fetchDocument();
    for (const { operation, route } of allRoutes) {
      const documented = document.paths[route.path]?.[route.method.toLowerCase()];
      if (route.internal) {
        expect(documented, `${operation} is internal`).toBeUndefined();
        continue;
      }
      expect(documented, operation).toBeDefined();
      expect(documented?.['x-required-scope'], operation).toBe(route.scope === 'public' ? undefined : route.scope);
      expect(documented?.security, operation).toEqual(route.scope === 'public' ? [] : [{ apiKey: [] }, { bearer: [] }]);
    }
  });

  it('every public route declares the schema of what it answers (204 and 302 answer no body)', () => {
    const undeclared = allRoutes
      .filter(({ route }) => !route.internal && route.successStatus !== 204 && route.successStatus !== 302 && !route.response && !route.events)
      .map(({ operation }) => operation);
    expect(undeclared).toEqual([]);
  });

  it('describes streamed replies and the event stream as text/event-stream', async () => {
    const { document } = await fetchDocument();
    const reply = document.paths['/v1/chat/chat/sessions/{id}/messages']?.post?.responses['200']?.content ?? {};
    expect(Object.keys(reply).sort()).toEqual(['application/json', 'text/event-stream']);
    const events = document.paths['/v1/chat/events/stream']?.get?.responses['200']?.content ?? {};
    expect(Object.keys(events)).toEqual(['text/event-stream']);
  });

  it('lists the routes as the snapshot does: a route change shows up here with its description', async () => {
    const { document } = await fetchDocument();
    const lines = Object.entries(document.paths).flatMap(([path, operations]) =>
      Object.entries(operations).map(([method, operation]) => {
        const statuses = Object.keys(operation.responses).join(' ');
        return `${method.toUpperCase().padEnd(6)} ${path}  [${operation['x-required-scope'] ?? 'public'}]  ${statuses}`;
      }),
    );
    await expect(`${lines.sort().join('\n')}\n`).toMatchFileSnapshot('snapshots/openapi-routes.txt');
  });
});

describe('the contract check', () => {
  const agentId = '7d3f7c2e-9a4b-4f7e-8a51-3c2b1d0e9f8a';
  const agent = {
    id: agentId,
    orgId: 'org',
    fullName: 'A',
    description: 'A',
    role: 'A',
    modelId: '0b0b6a4e-8f5e-5c3a-9d2e-1f4a7b6c5d3e',
    voiceEnabled: false,
    voicePipelineMode: null,
    tools: [],
    publishMode: 'AUTO',
    isActive: true,
    isPublic: false,
    createdAt: '2026-11-25T10:00:00.000Z',
    updatedAt: '2026-11-25T10:00:00.000Z',
  };
  const json = new Headers({ 'content-type': 'application/json; charset=utf-8' });
  const received = (status: number, body: unknown, url = `/v1/chat/agents/${agentId}`, method = 'GET') => () =>
    assertDocumentedResponse({ method, url, status, headers: json, text: JSON.stringify(body) });
  const envelope = (code: string, status: number) => ({ error: { code, message: 'm', status }, meta: { requestId: 'r', timestamp: '2026-11-25T10:00:00.000Z' } });

  it('accepts a response the description allows', () => {
    expect(received(200, agent)).not.toThrow();
    expect(received(404, envelope('NOT_FOUND', 404))).not.toThrow();
  });

  it('refuses a field the schema does not declare, such as a leaked secret', () => {
    expect(received(200, { ...agent, secret: 'x' })).toThrow(/must NOT have additional properties[^]*secret/);
  });

  it('refuses a status the route does not list', () => {
    expect(received(409, envelope('TOOL_IN_USE', 409))).toThrow(/lists only/);
  });

  it("refuses an error code outside the route's list", () => {
    expect(received(422, envelope('MODELS_NOT_FOUND', 422), '/v1/chat/tools', 'POST')).toThrow(/allowed values/);
    expect(errorCodesOf(routeGroups.flatMap((group) => Object.values(group.routes)).find((route) => route.path === '/v1/chat/tools' && route.method === 'POST')!)).not.toContain('MODELS_NOT_FOUND');
  });

  it('refuses a body on a 204', () => {
    expect(received(204, {}, `/v1/chat/agents/${agentId}`, 'DELETE')).toThrow(/describes none/);
  });
});

describe('GET /docs and the developer pages', () => {
  it('serves the reference page from our own assets, not indexed, loading nothing from elsewhere', async () => {
    const page = await fetch(`${api.baseUrl}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('x-robots-tag')).toBe('noindex, nofollow');
    const policy = page.headers.get('content-security-policy') ?? '';
    expect(policy).toContain("script-src 'self'");
    expect(policy).toContain("connect-src 'self'");
    const html = await page.text();
    expect(html).not.toMatch(/(src|href)="https?:/);
    const scripts = [...html.matchAll(/<script src="([^"]+)"/g)].map((match) => match[1]);
    expect(scripts).toEqual(['/assets/scalar.js', '/assets/docs.js']);
    for (const script of scripts) {
      const asset = await fetch(`${api.baseUrl}${script}`);
      expect(asset.status, script).toBe(200);
      expect(asset.headers.get('content-type')).toMatch(/^text\/javascript/);
      expect(asset.headers.get('x-robots-tag')).toBe('noindex, nofollow');
    }
  });

  it('links the changelog, which is served beside it', async () => {
    const { document } = await fetchDocument();
    expect(document.info.description).toContain('/docs/changelog');
    const changelog = await fetch(`${api.baseUrl}/docs/changelog`);
    expect(changelog.status).toBe(200);
    expect(changelog.headers.get('x-robots-tag')).toBe('noindex, nofollow');
    const text = await changelog.text();
    expect(text).toBe(readFileSync(resolve(repoRoot, 'CHANGELOG.md'), 'utf8'));
    expect(text).toMatch(/### Deprecated\n- `POST \/api\/v1\/chat\/sessions`[^]*Sunset/);
  });

  it('compresses assets for clients that accept gzip', async () => {
    const plain = await fetch(`${api.baseUrl}/assets/playground.js`, { headers: { 'accept-encoding': 'identity' } });
    expect(plain.headers.get('content-encoding')).toBeNull();
    // node:http, because fetch would decompress it.
    const { headers, body } = await new Promise<{ headers: IncomingHttpHeaders; body: Buffer }>((resolvePromise, reject) => {
      get(`${api.baseUrl}/assets/playground.js`, { headers: { 'accept-encoding': 'gzip' } }, (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => resolvePromise({ headers: response.headers, body: Buffer.concat(chunks) }));
      }).on('error', reject);
    });
    expect(headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(body).toString('utf8')).toBe(await plain.text());
  });

  it('serves the playground page, not indexed', async () => {
    const page = await fetch(`${api.baseUrl}/playground`);
    expect(page.status).toBe(200);
    expect(page.headers.get('x-robots-tag')).toBe('noindex, nofollow');
    expect(await page.text()).toContain('<script type="module" src="/assets/playground.js"></script>');
  });

  it('answers 404 in the envelope for an asset it does not have', async () => {
    const response = await api.request('GET', '/assets/secrets.txt');
    expect(response.status).toBe(404);
    expect(response.body.error.code).toBe('NOT_FOUND');
  });
});

describe('the typed client (clients/typescript)', () => {
  it('is what the generator makes of the current description', async () => {
    expect(readFileSync(schemaFile, 'utf8'), 'run `npm run generate:client` and commit the result').toBe(await clientTypes());
  });

  it('creates an agent, streams a reply delta by delta, and follows the events of the session', async () => {
    const { key } = await api.newOrg();
    const streamOpen = signal();
    const client = createApiClient({ baseUrl: api.baseUrl, apiKey: key, fetch: answered(globalThis.fetch, streamOpen.resolve) });
    const types = 'session.created,message.added';
    // A new stream starts from the moment the server opens it: the session begins once its answer has come.
    const abort = new AbortController();
    const seen: { type: string; id: string }[] = [];
    const following = (async () => {
      for await (const event of client.events({ types }, abort.signal)) {
        seen.push({ type: event.type, id: event.id });
        if (seen.length === 3) abort.abort();
      }
    })();
    await streamOpen.promise;

    const agent = await client.POST('/v2/chat/agents', { body: { fullName: 'Client', description: 'Typed', role: 'Helps' } });
    expect(agent.response.status).toBe(201);
    const session = await client.POST('/v1/chat/chat/sessions', { body: { agentId: agent.data!.id } });
    const deltas: string[] = [];
    for await (const delta of client.replyDeltas(session.data!.id, { content: 'Hello there' })) deltas.push(delta);
    expect(deltas.length).toBeGreaterThan(3);
    expect(deltas.join('')).toMatch(/^You said: "Hello there"\./);

    await following;
    expect(seen.map((event) => event.type)).toEqual(['session.created', 'message.added', 'message.added']);

    // Resumed after the first event: the two after it, each once (the first may come again, from the overlap the
    // server re-reads behind a cursor: docs/event-stream.md).
    const resumed = new AbortController();
    const after: string[] = [];
    const wanted = [seen[1]!.id, seen[2]!.id];
    for await (const event of client.events({ types, lastEventId: seen[0]!.id }, resumed.signal)) {
      after.push(event.id);
      if (wanted.every((id) => after.includes(id))) resumed.abort();
    }
    // Each once; two events logged in the same millisecond may come in another order than live (docs/event-stream.md).
    expect(after.filter((id) => id !== seen[0]!.id).toSorted()).toEqual(wanted.toSorted());
  });

  /** A stream that ends as soon as it is read: the client then waits a minute before it reconnects. */
  const endingAtOnce = (read: () => void): typeof fetch => async () =>
    new Response(
      new ReadableStream({
        pull(controller) {
          controller.enqueue(new TextEncoder().encode('retry: 60000\n\n'));
          controller.close();
          read();
        },
      }),
      { headers: { 'content-type': 'text/event-stream' } },
    );
  /** A server that never answers: the request waits until it is aborted. */
  const neverAnswering: typeof fetch = (input) =>
    new Promise((_, reject) => {
      const signal = input instanceof Request ? input.signal : undefined;
      signal?.addEventListener('abort', () => reject(signal.reason));
    });

  it.each([
    ['on an idle stream (no event, no heartbeat yet)', (ready: () => void) => answered(globalThis.fetch, ready)],
    ['while the server has not answered yet', (ready: () => void) => counted(neverAnswering, ready)],
    ['while it waits to reconnect after the server ended the stream', (ready: () => void) => endingAtOnce(ready)],
  ])('events(): an abort %s ends the iteration at once, without an error', async (_when, fetchOf) => {
    // Prepare
    const { key } = await api.newOrg();
    const ready = signal();
    const requests: string[] = [];
    const fetchWith = fetchOf(ready.resolve);
    const client = createApiClient({ baseUrl: api.baseUrl, apiKey: key, fetch: (input, init) => (requests.push(String(input instanceof Request ? input.url : input)), fetchWith(input, init)) });
    const abort = new AbortController();
    const received: string[] = [];
    const following = (async () => {
      for await (const event of client.events({}, abort.signal)) received.push(event.type);
    })();
    await ready.promise;

    // Act
    const abortedAt = performance.now();
    abort.abort();
    await following;
    const endedAfterMs = performance.now() - abortedAt;

    // Assess: it did not wait for the reconnect pause (60 s), a heartbeat (15 s) or an answer, and did not reconnect.
    expect(endedAfterMs).toBeLessThan(10_000);
    expect(received).toEqual([]);
    expect(requests).toHaveLength(1);
  });
});

/** A promise and the function that settles it. */
function signal(): { promise: Promise<void>; resolve: () => void } {
  let resolve = () => {};
  const promise = new Promise<void>((settle) => (resolve = settle));
  return { promise, resolve };
}

/** `fetch` that calls `onAnswer` once the answer's headers have come (for the event stream: the server has opened it). */
function answered(fetchWith: typeof fetch, onAnswer: () => void): typeof fetch {
  return async (input, init) => {
    const response = await fetchWith(input, init);
    onAnswer();
    return response;
  };
}

/** `fetch` that calls `onRequest` once the request is under way. */
function counted(fetchWith: typeof fetch, onRequest: () => void): typeof fetch {
  return (input, init) => {
    const pending = fetchWith(input, init);
    onRequest();
    return pending;
  };
}
