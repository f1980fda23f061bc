/**
 * Keeps the docs from drifting away from the code: the route table and scope list of docs/auth.md, the error
 * code table of docs/api-conventions.md, and the metrics and alarm thresholds of docs/deploy.md, are compared with
 * what the code declares.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { routeGroups } from '../functions/route-groups.ts';
import { scopes } from '../shared/platform/http/scopes.ts';
import * as errors from '../shared/platform/errors.ts';
import { toErrorEnvelope } from '../shared/platform/http/error-envelope.ts';
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
