/**
 * Keeps the docs from drifting away from the code: the route table and scope list of docs/auth.md, and the error
 * code table of docs/api-conventions.md, are compared with what the code declares; the event catalogue of the
 * events, webhooks and event-stream pages with the code's; the metrics and alarm thresholds of docs/deploy.md with
 * the stack's; and no page describes what ships as still to come.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { routeGroups } from '../functions/route-groups.ts';
import { scopes } from '../shared/platform/http/scopes.ts';
import * as errors from '../shared/platform/errors.ts';
import { toErrorEnvelope } from '../shared/platform/http/error-envelope.ts';
import { eventTypes } from '../shared/webhooks/event-catalog.ts';
import { sseEventName } from '../shared/webhooks/event-stream.ts';
import { alarmThresholds, platformMetrics } from '../infra/operations.ts';

const repoRoot = resolve(import.meta.dirname, '..');
const read = (path: string): string => readFileSync(resolve(repoRoot, path), 'utf8');

/** The text under a heading (e.g. `## Routes`), up to the next heading of the same or a higher level. */
function section(markdown: string, heading: string): string {
  const lines = markdown.split('\n');
  const start = lines.findIndex((line) => line.trim() === heading);
  if (start < 0) throw new Error(`heading "${heading}" not found`);
  const level = heading.indexOf(' ');
  const end = lines.findIndex(
    (line, index) => index > start && /^#{1,6} /.test(line) && line.indexOf(' ') <= level,
  );
  return lines.slice(start + 1, end < 0 ? undefined : end).join('\n');
}

/** The body rows of the markdown tables in `text` (header and separator rows dropped), cells trimmed, backticks removed. */
function tableRows(text: string): string[][] {
  const lines = text.split('\n').filter((line) => line.trim().startsWith('|'));
  const cells = lines.map((line) =>
    line
      .trim()
      .replace(/^\|/, '')
      .replace(/\|$/, '')
      .split('|')
      .map((cell) => cell.trim().replaceAll('`', '')),
  );
  const isSeparator = (row: string[]) => row.every((cell) => /^:?-{3,}:?$/.test(cell));
  return cells.filter((row, index) => !isSeparator(row) && !(index + 1 < cells.length && isSeparator(cells[index + 1] as string[])));
}

const authDoc = read('docs/auth.md');
const conventionsDoc = read('docs/api-conventions.md');

const declaredRoutes = routeGroups.flatMap((group) =>
  Object.values(group.routes).map((route) => ({ method: route.method, path: route.path, scope: route.scope as string })),
);
const routeId = (route: { method: string; path: string }) => `${route.method} ${route.path}`;

describe('docs/auth.md', () => {
  const documented = tableRows(section(authDoc, '## Routes')).map(([method = '', path = '', scope = '']) => ({ method, path, scope }));
  const planned = tableRows(section(authDoc, '## Planned routes')).map(([method = '', path = '', scope = '']) => ({ method, path, scope }));

  it('lists every served route with its exact method, path and scope', () => {
    expect(declaredRoutes.length).toBeGreaterThan(0);
    for (const route of declaredRoutes) {
      expect(documented, `${routeId(route)} (${route.scope})`).toContainEqual(route);
    }
  });

  it('lists no route the code does not serve in the route table', () => {
    const served = new Set(declaredRoutes.map((route) => `${routeId(route)} ${route.scope}`));
    const extra = documented.filter((row) => !served.has(`${routeId(row)} ${row.scope}`));
    expect(extra).toEqual([]);
    expect(documented).toHaveLength(declaredRoutes.length);
  });

  it('keeps planned routes apart from served ones, each with a known scope', () => {
    const served = new Set(declaredRoutes.map(routeId));
    expect(planned.filter((row) => served.has(routeId(row)))).toEqual([]);
    const known = new Set<string>(scopes);
    expect(planned.filter((row) => !known.has(row.scope))).toEqual([]);
  });

  it('lists exactly the scopes of shared/platform/http/scopes.ts', () => {
    const listed = tableRows(section(authDoc, '## Scopes')).map(([scope = '']) => scope);
    for (const scope of scopes) expect(listed, scope).toContain(scope);
    expect([...listed].sort()).toEqual([...scopes].sort());
  });
});

describe('docs/api-conventions.md', () => {
  const documented = new Map(
    tableRows(section(conventionsDoc, '## Error codes in use')).map(([code = '', status = '']) => [code, Number(status)]),
  );

  /** The `statusByCode` mapping, read from the source because the module keeps it private. */
  const mapped = (() => {
    const source = read('shared/platform/http/error-envelope.ts');
    const block = /const statusByCode[^=]*=\s*\{([\s\S]*?)\};/.exec(source);
    if (!block) throw new Error('statusByCode not found in shared/platform/http/error-envelope.ts');
    return new Map([...(block[1] as string).matchAll(/^\s*([A-Z][A-Z0-9_]*)\s*:\s*(\d{3})\s*,?\s*$/gm)].map((match) => [match[1] as string, Number(match[2])]));
  })();

  /** What each error class of shared/platform/errors.ts really answers, through the one function that picks statuses. */
  const produced = (() => {
    const result = new Map<string, number>();
    for (const value of Object.values(errors)) {
      if (typeof value !== 'function' || !(value.prototype instanceof errors.AppError)) continue;
      const ErrorClass = value as unknown as new (message: string, extra?: unknown) => errors.AppError;
      const envelope = toErrorEnvelope(new ErrorClass('probe', []), 'request-id');
      result.set(envelope.error.code, envelope.error.status);
    }
    const unexpected = toErrorEnvelope(new Error('boom'), 'request-id');
    result.set(unexpected.error.code, unexpected.error.status);
    return result;
  })();

  it('documents every code of the status mapping with its status', () => {
    expect(mapped.size).toBeGreaterThan(0);
    for (const [code, status] of mapped) expect(documented.get(code), code).toBe(status);
  });

  it('documents every code the error classes produce, and GENERIC_ERROR, with its status', () => {
    for (const [code, status] of produced) expect(documented.get(code), code).toBe(status);
  });

  it('lists no code in use that the code cannot produce', () => {
    const known = new Set([...mapped.keys(), ...produced.keys()]);
    expect([...documented.keys()].filter((code) => !known.has(code))).toEqual([]);
  });

  it('keeps planned codes apart from the codes in use', () => {
    const planned = tableRows(section(conventionsDoc, '## Planned error codes')).map(([code = '']) => code);
    expect(planned.length).toBeGreaterThan(0);
    expect(planned.filter((code) => documented.has(code))).toEqual([]);
  });
});

describe('docs/api-conventions.md#aliases', () => {
  it('lists exactly the declared aliases, each beside its route', () => {
    const documented = tableRows(section(conventionsDoc, '## Aliases')).map(([method = '', alias = '', path = '']) => `${method} ${alias} → ${path}`);
    const declared = routeGroups.flatMap((group) =>
      Object.values(group.routes).flatMap((route) => (route.aliases ?? []).map((alias) => `${route.method} ${alias} → ${route.path}`)),
    );
    expect(declared.length).toBeGreaterThan(0);
    expect([...documented].sort()).toEqual([...declared].sort());
  });
});

describe('docs/deploy.md', () => {
  const operations = section(read('docs/deploy.md'), '## Dashboards and alarms');

  it("lists exactly the platform's metrics, each with its unit", () => {
    const documented = new Map(
      tableRows(section(operations, "### The platform's metrics")).flatMap(([names = '', unit = '']) => names.split(', ').map((name) => [name, unit] as const)),
    );
    expect([...documented.keys()].sort()).toEqual(platformMetrics.map((metric) => metric.name).sort());
    for (const metric of platformMetrics) expect(documented.get(metric.name), metric.name).toBe(metric.unit);
  });

  it("states the alarms' thresholds as the stack sets them", () => {
    const alarms = section(operations, '### Being told');
    expect(alarms).toContain(`more than ${alarmThresholds.serverErrorPercent}% of requests`);
    expect(alarms).toContain(`at least ${alarmThresholds.minimumRequests} requests`);
    expect(alarms).toContain(`above ${alarmThresholds.turnOverheadP99Ms} ms`);
  });
});

describe('the event catalogue in the docs', () => {
  it('docs/events.md has a row for every event type of the catalogue, and none other', () => {
    const listed = tableRows(section(read('docs/events.md'), '## The catalog')).map(([type = '']) => type);
    expect([...listed].sort()).toEqual([...eventTypes].sort());
  });

  it("docs/webhooks.md's event filter names every event type", () => {
    const filter = section(read('docs/webhooks.md'), '## Event filter');
    for (const type of eventTypes) expect(filter, type).toContain(`\`${type}\``);
  });

  it('docs/event-stream.md names every event the stream sends, under its SSE name', () => {
    const format = section(read('docs/event-stream.md'), '## The SSE format');
    for (const type of eventTypes) expect(format, type).toContain(`\`${sseEventName(type)}\``);
  });
});

describe('README.md and docs/ describe what ships', () => {
  /**
   * Phrases that put a shipped feature in the future. A design not built yet is marked **planned** (docs/decisions.md,
   * docs/data-model.md), with what it is, not with an issue it waits for.
   */
  const stalePhrases: readonly RegExp[] = [
    /\blater issues?\b/i,
    /\b(?:a|the|an?other|next|future|coming) issues? (?:adds?|brings?|will)\b/i,
    /\broadmap\b/i,
    /\bwhen (?:voice|calls|knowledge|campaigns|contacts|usage|billing|whatsapp|webhooks|analysis|the [a-z]+ issue) (?:comes?|lands?|arrives?|ships?)\b/i,
    /\bthe (?:voice|knowledge|campaigns?|billing|usage|whatsapp|webhooks?) issue\b/i,
    /\barrives? with (?:a |the )?later\b/i,
    /\bnot (?:built|implemented|shipped|served|available) yet\b/i,
    /\bcoming soon\b/i,
    /\band later `/i,
    /\blater (?:hangups?|voice|calls?|knowledge|campaigns?|contacts|usage|billing|whatsapp)\b/i,
  ];
  const pages = ['README.md', ...readdirSync(resolve(repoRoot, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];

  it.each(pages)('%s says nothing ships "later" that has shipped', (page) => {
    const lines = read(page).split('\n');
    const stale = lines.flatMap((line, index) => (stalePhrases.some((phrase) => phrase.test(line)) ? [`${page}:${index + 1}: ${line.trim()}`] : []));
    expect(stale).toEqual([]);
  });

  it('catches the phrases the docs once had', () => {
    const once = [
      'Sections marked **planned** describe the design for the later issues (events delivery, voice, knowledge,',
      'From the spec; they arrive with later issues. Not produced by any code yet.',
      'Voice, knowledge, campaigns and usage are on the roadmap.',
      'start at `answeredAt` rather than at creation, the voice issue puts that time in the record',
      "`session.ended`, `session.closed`, `session.message.created`, `message.added`, and later `usage.updated`,",
      'Recordings are kept when voice comes.',
      'When a session ends (closed by the user, ended by the agent, expired; later hangup and ttl for voice calls), a',
    ];
    for (const line of once) expect(stalePhrases.some((phrase) => phrase.test(line)), line).toBe(true);
  });
});
