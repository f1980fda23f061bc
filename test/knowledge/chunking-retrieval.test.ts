import fc from 'fast-check';
import { embedMany } from 'ai';
import { describe, expect, it } from 'vitest';
import { builtinEmbedders, builtinEmbeddingModel, embedText, embedWords } from '../../shared/models/builtin-embedder.ts';
import { chunkText } from '../../shared/knowledge/chunker.ts';
import { scoreFusion } from '../../shared/knowledge/hybrid-retrieval.ts';

const words = (text: string) => text.split(/\s+/).filter(Boolean);

describe('chunking', () => {
  it('keeps each chunk within its section, with the heading path, and never spans two headings', () => {
    const chunks = chunkText('# Billing\nIntro.\n## Refunds\nWithin 30 days.\n### Exceptions\nSale items.\n# Support\nWeekdays.', { size: 400, overlap: 60 });
    expect(chunks.map((chunk) => [chunk.headingPath, chunk.text])).toEqual([
      [['Billing'], 'Intro.'],
      [['Billing', 'Refunds'], 'Within 30 days.'],
      [['Billing', 'Refunds', 'Exceptions'], 'Sale items.'],
      [['Support'], 'Weekdays.'],
    ]);
  });

  it('does not take a # line inside a code fence for a heading', () => {
    const chunks = chunkText('# Setup\n```sh\n# install\nnpm ci\n```', { size: 400, overlap: 60 });
    expect(chunks).toHaveLength(1);
    expect(chunks[0]!.headingPath).toEqual(['Setup']);
  });

  it('cuts long text into bounded windows that overlap and together keep every word in order', () => {
    fc.assert(
      fc.property(
        fc.array(fc.stringMatching(/^[a-z]{1,12}$/), { minLength: 1, maxLength: 1500 }),
        fc.integer({ min: 50, max: 200 }),
        fc.integer({ min: 0, max: 40 }),
        (vocabulary, size, overlap) => {
          const text = vocabulary.join(' ');
          const chunks = chunkText(text, { size, overlap }, false);
          for (const chunk of chunks) expect(chunk.text.length).toBeLessThanOrEqual(size * 4);
          // Nothing is lost: every word is in some chunk, the first chunk starts the text and the last one ends it.
          const seen = new Set(chunks.flatMap((chunk) => words(chunk.text)));
          for (const word of vocabulary) expect(seen.has(word)).toBe(true);
          expect(words(chunks.at(-1)!.text).at(-1)).toBe(vocabulary.at(-1));
          expect(words(chunks[0]!.text)[0]).toBe(vocabulary[0]);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('repeats the end of a window at the start of the next when overlap is set', () => {
    const text = Array.from({ length: 600 }, (_, n) => `w${n}`).join(' ');
    const [first, second] = chunkText(text, { size: 100, overlap: 20 }, false);
    const tail = words(first!.text).slice(-5);
    expect(words(second!.text).slice(0, 40)).toEqual(expect.arrayContaining(tail));
  });
});

describe('built-in embedders', () => {
  it.each(Object.entries(builtinEmbedders))('%s is deterministic, L2-normalised, of its dimensions, and places texts sharing words nearer than unrelated ones', async (modelId, { dimensions, embed }) => {
    const { embeddings } = await embedMany({ model: builtinEmbeddingModel(modelId), values: ['refund within 30 days', 'refunds are accepted within thirty days', 'the office opens at nine'] });
    expect(embeddings[0]).toEqual(embed('refund within 30 days'));
    expect(embeddings[0]).toHaveLength(dimensions);
    const cosine = (a: number[], b: number[]) => a.reduce((sum, value, index) => sum + value * b[index]!, 0);
    expect(cosine(embeddings[0]!, embeddings[0]!)).toBeCloseTo(1, 6);
    expect(cosine(embeddings[0]!, embeddings[1]!)).toBeGreaterThan(cosine(embeddings[0]!, embeddings[2]!));
  });

  it('weighs a repeated word less than its count, so that one word does not drown the others', () => {
    const cosine = (a: number[], b: number[]) => a.reduce((sum, value, index) => sum + value * b[index]!, 0);
    const query = embedWords('refund deadline');
    expect(cosine(query, embedWords('refund refund refund refund deadline'))).toBeGreaterThan(cosine(embedText('refund deadline'), embedText('refund refund refund refund deadline')));
  });
});

describe('score fusion', () => {
  it('scores 1 for first in every ranking, and keeps a result one method finds far ahead of the rest on top', () => {
    const bm25 = { ranking: [{ key: 'clear', score: 140 }, { key: 'both', score: 90 }, { key: 'other', score: 80 }], scale: 'max' as const, weight: 0.8 };
    const vectors = { ranking: [{ key: 'both', score: 0.9 }, { key: 'other', score: 0.85 }, { key: 'clear', score: 0.3 }], scale: 'min-max' as const, weight: 0.2 };
    const fused = scoreFusion([bm25, vectors]);
    expect(fused.map((entry) => entry.key)).toEqual(['clear', 'both', 'other']);
    expect(scoreFusion([bm25, { ...vectors, ranking: [{ key: 'clear', score: 0.9 }] }])[0]).toEqual({ key: 'clear', score: 1 });
  });

  it('keeps every score within 0–1 and orders by the weighted sum, whatever the rankings', () => {
    const ranking = fc.uniqueArray(fc.record({ key: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f'), score: fc.double({ min: 0, max: 100, noNaN: true }) }), { selector: (entry) => entry.key, maxLength: 6 });
    fc.assert(
      fc.property(ranking, ranking, fc.double({ min: 0.01, max: 0.99, noNaN: true }), (lexical, semantic, weight) => {
        const fused = scoreFusion([
          { ranking: lexical, scale: 'max', weight: 1 - weight },
          { ranking: semantic, scale: 'min-max', weight },
        ]);
        expect(new Set(fused.map((entry) => entry.key))).toEqual(new Set([...lexical, ...semantic].map((entry) => entry.key)));
        for (const entry of fused) expect(entry.score).toBeGreaterThanOrEqual(0);
        for (const entry of fused) expect(entry.score).toBeLessThanOrEqual(1 + 1e-9);
        for (let index = 1; index < fused.length; index += 1) expect(fused[index - 1]!.score).toBeGreaterThanOrEqual(fused[index]!.score);
      }),
    );
  });
});
