import fc from 'fast-check';
import { embedMany } from 'ai';
import { describe, expect, it } from 'vitest';
import { builtinEmbeddingModel, embedText } from '../../shared/knowledge/builtin-embedder.ts';
import { chunkText } from '../../shared/knowledge/chunker.ts';
import { reciprocalRankFusion } from '../../shared/knowledge/hybrid-retrieval.ts';

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

describe('built-in embedder', () => {
  it('is deterministic, L2-normalised, and places texts sharing words nearer than unrelated ones', async () => {
    const { embeddings } = await embedMany({ model: builtinEmbeddingModel(), values: ['refund within 30 days', 'refunds are accepted within thirty days', 'the office opens at nine'] });
    expect(embeddings[0]).toEqual(embedText('refund within 30 days'));
    const cosine = (a: number[], b: number[]) => a.reduce((sum, value, index) => sum + value * b[index]!, 0);
    expect(cosine(embeddings[0]!, embeddings[0]!)).toBeCloseTo(1, 6);
    expect(cosine(embeddings[0]!, embeddings[1]!)).toBeGreaterThan(cosine(embeddings[0]!, embeddings[2]!));
  });
});

describe('reciprocal rank fusion', () => {
  it('scores 1 for first in every list, and prefers an item ranked well by both over one ranked first by one', () => {
    const fused = reciprocalRankFusion([
      ['a', 'b', 'c'],
      ['b', 'd', 'a'],
    ]);
    expect(fused[0]).toEqual({ key: 'b', score: expect.any(Number) });
    expect(fused.map((entry) => entry.key)).toEqual(['b', 'a', 'd', 'c']);
    expect(reciprocalRankFusion([['x'], ['x']])[0]!.score).toBeCloseTo(1, 10);
  });
});
