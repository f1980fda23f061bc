import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { percentiles, sketchBin } from '../../shared/billing/analytics.ts';
import { addCounts } from '../../shared/billing/usage.ts';

/** The exact value at a quantile, with the rank the sketch uses: the first value whose cumulative count passes q × (n − 1). */
function exact(values: number[], quantile: number): number {
  const sorted = values.toSorted((a, b) => a - b);
  return sorted[Math.floor(quantile * (sorted.length - 1))] as number;
}

const binsOf = (values: number[]) => {
  const counts: Record<string, number> = {};
  for (const value of values) addCounts(counts, { [sketchBin('platformMs', value)]: 1 });
  return counts;
};

describe('percentiles from summed sketch bins', () => {
  it('are within 2 % of the exact percentiles, whatever the values, and the same when the bins come from several items', () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: 0.01, max: 1e6, noNaN: true }), { minLength: 1, maxLength: 300 }), fc.nat({ max: 300 }), (values, split) => {
        const merged = addCounts(binsOf(values.slice(0, split)), binsOf(values.slice(split)));
        const result = percentiles(merged, 'platformMs');
        expect(result?.count).toBe(values.length);
        for (const [quantile, reported] of [[0.5, result?.p50], [0.95, result?.p95]] as const) {
          const truth = exact(values, quantile);
          expect(Math.abs((reported as number) - truth)).toBeLessThanOrEqual(truth * 0.02 + 0.01);
        }
      }),
    );
  });

  it('is null without observations', () => {
    expect(percentiles({ 'durationSeconds#3': 2 }, 'platformMs')).toBeNull();
  });
});
