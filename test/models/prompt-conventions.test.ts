import { describe, expect, it } from 'vitest';
import { firstExcerpt, knowledgeContextMessage } from '../../shared/models/prompt-conventions.ts';

describe('the knowledge excerpts of a turn prompt', () => {
  it('reads back the first excerpt the turn engine wrote, its blank lines squeezed', () => {
    // Prepare
    const message = knowledgeContextMessage([
      { source: 'Refund policy › Deadlines, page 2', text: 'Refunds are accepted within 30 days.\n\n\nAsk support.' },
      { source: 'Shipping', text: 'Parcels leave within 2 days.' },
    ]);

    // Act
    const first = firstExcerpt(message);

    // Assess
    expect(first).toEqual({ source: 'Refund policy › Deadlines, page 2', text: 'Refunds are accepted within 30 days.\nAsk support.' });
  });

  it('finds none in a system message of another kind', () => {
    expect(firstExcerpt('You are a helpful agent.\n\n[1] Not knowledge\ntext')).toBeUndefined();
  });
});
