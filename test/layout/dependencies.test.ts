/**
 * The dependency check of issue 22 over the TypeScript imports of the repository: shared/ is one folder per bounded
 * context (shared/contexts.ts), dependencies point one way, other code goes through each context's public surface,
 * and no file import circle exists. It reads the sources only (no module is loaded), so it runs in a blink.
 */
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { posix, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { contexts } from '../../shared/contexts.ts';

const repoRoot = resolve(import.meta.dirname, '../..');
/** The composition root that wires every context's store; the context roots (`*-runtime.ts`) build on it. */
const root = 'shared/runtime.ts';
const declaration = 'shared/contexts.ts';

const sources = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*.ts', '*.tsx'], { cwd: repoRoot, encoding: 'utf8' })
  .split('\n')
  .filter((file) => file && !file.startsWith('node_modules/'));

/** Relative specifiers of static imports and re-exports, dynamic imports and `typeof import(...)`. */
const specifier = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)['"](\.{1,2}\/[^'"]+)['"]/gm;

interface Edge {
  from: string;
  to: string;
}

const edges: Edge[] = sources.flatMap((from) => {
  let text: string;
  try {
    text = readFileSync(resolve(repoRoot, from), 'utf8');
  } catch {
    return []; // deleted in the working tree
  }
  return [...text.matchAll(specifier)].map((match) => ({ from, to: posix.normalize(posix.join(posix.dirname(from), match[1] as string)) }));
});

const byName = new Map(contexts.map((context) => [context.name, context]));
/** The context a file of shared/ belongs to, if any. */
const contextOf = (file: string) => (file.startsWith('shared/') ? byName.get(file.split('/')[1] as string) : undefined);
const inContext = (file: string) => file.split('/').slice(2).join('/');
const edgeId = (edge: Edge) => `${edge.from} -> ${edge.to}`;

describe('shared/ by bounded context', () => {
  it('puts every file of shared/ in a declared context folder', () => {
    const loose = sources.filter((file) => file.startsWith('shared/') && file !== root && file !== declaration && !contextOf(file));
    expect(loose).toEqual([]);
  });

  it('declares each context once, in folders that exist, with surfaces that exist', () => {
    expect(new Set(contexts.map((context) => context.name)).size).toBe(contexts.length);
    const files = new Set(sources);
    const missing = contexts.flatMap((context) => context.surface.map((file) => `shared/${context.name}/${file}`)).filter((file) => !files.has(file));
    expect(missing).toEqual([]);
  });

  it('imports only existing files', () => {
    const files = new Set(sources);
    expect(edges.filter((edge) => /\.tsx?$/.test(edge.to) && !files.has(edge.to)).map(edgeId)).toEqual([]);
  });

  const upward = edges.filter((edge) => {
    const from = contextOf(edge.from);
    const to = contextOf(edge.to);
    return from && to && from !== to && to.layer >= from.layer;
  });
  it('points every import between contexts down the layers', () => {
    expect(upward.map(edgeId)).toEqual([]);
  });

  it('reaches a context from outside only through its public surface', () => {
    const bypassing = edges.filter((edge) => {
      const to = contextOf(edge.to);
      if (!to || edge.from.startsWith('test/') || edge.from === root || edge.from === declaration) return false;
      if (contextOf(edge.from) === to) return false;
      return !to.surface.includes(inContext(edge.to));
    });
    expect(bypassing.map(edgeId)).toEqual([]);
  });

  it('keeps each surface to the files something outside the context imports', () => {
    const usedFromOutside = new Set(
      edges
        .filter((edge) => !edge.from.startsWith('test/') && edge.from !== root && edge.from !== declaration && contextOf(edge.to) && contextOf(edge.from) !== contextOf(edge.to))
        .map((edge) => edge.to),
    );
    const unused = contexts.flatMap((context) => context.surface.map((file) => `shared/${context.name}/${file}`)).filter((file) => !usedFromOutside.has(file));
    expect(unused).toEqual([]);
  });

  it('lets only composition roots, functions/, infra/, bench/ and tests use shared/runtime.ts', () => {
    const users = edges.filter((edge) => edge.to === root && edge.from.startsWith('shared/') && !edge.from.endsWith('-runtime.ts'));
    expect(users.map(edgeId)).toEqual([]);
  });

  it('has no import circle between files of shared/, functions/, services/, infra/ and clients/', () => {
    const graph = new Map<string, string[]>();
    for (const edge of edges.filter((edge) => /^(shared|functions|services|infra|clients)\//.test(edge.from))) graph.set(edge.from, [...(graph.get(edge.from) ?? []), edge.to]);
    const circles: string[][] = [];
    const index = new Map<string, number>();
    const low = new Map<string, number>();
    const stack: string[] = [];
    const onStack = new Set<string>();
    let next = 0;
    const visit = (file: string) => {
      index.set(file, next);
      low.set(file, next++);
      stack.push(file);
      onStack.add(file);
      for (const target of graph.get(file) ?? []) {
        if (!index.has(target)) {
          visit(target);
          low.set(file, Math.min(low.get(file) as number, low.get(target) as number));
        } else if (onStack.has(target)) low.set(file, Math.min(low.get(file) as number, index.get(target) as number));
      }
      if (low.get(file) === index.get(file)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop() as string;
          onStack.delete(member);
          component.push(member);
        } while (member !== file);
        if (component.length > 1) circles.push(component.sort());
      }
    };
    for (const file of graph.keys()) if (!index.has(file)) visit(file);
    expect(circles).toEqual([]);
  });

  it('is described in docs/layout.md: every context with its layer, purpose and surface', () => {
    const doc = readFileSync(resolve(repoRoot, 'docs/layout.md'), 'utf8');
    for (const context of contexts) {
      expect(doc, context.name).toContain(`| ${context.layer} | \`shared/${context.name}/\` | ${context.purpose} |`);
      expect(doc, context.name).toContain(`| \`${context.name}\` | ${context.surface.map((file) => `\`${file}\``).join(', ')} |`);
    }
  });
});
