import { describe, expect, it } from 'vitest';
import { wordErrorRate } from '../../shared/speech/word-error-rate.ts';

describe('the word error rate', () => {
  it('counts substitutions, deletions and insertions over the words said', () => {
    expect(wordErrorRate('where is my order', 'where is my order')).toBe(0);
    expect(wordErrorRate('where is my order', 'where was my order')).toBe(0.25);
    expect(wordErrorRate('where is my order', 'where my order')).toBe(0.25);
    expect(wordErrorRate('where is my order', 'where is is my order now')).toBe(0.5);
    expect(wordErrorRate('yes', 'no no no')).toBe(3);
  });

  it('ignores case and punctuation', () => {
    expect(wordErrorRate('Yes, that is correct.', 'yes that is correct')).toBe(0);
    expect(wordErrorRate("I'd like it", "i'd like it")).toBe(0);
  });

  it('is 0 for nothing said and nothing heard, and 1 for words heard in silence', () => {
    expect(wordErrorRate('', '')).toBe(0);
    expect(wordErrorRate('', 'hello')).toBe(1);
    expect(wordErrorRate('hello', '')).toBe(1);
  });
});
