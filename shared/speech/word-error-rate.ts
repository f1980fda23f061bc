/**
 * Word error rate: the word-level edit distance (substitutions, deletions, insertions) from what was said to what was
 * heard, over the words said. Words are compared lower-cased, without punctuation, numbers spelled as the
 * recogniser spells them being the caller's business.
 */
export function words(text: string): string[] {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}'\s]/gu, ' ')
    .split(/\s+/)
    .filter(Boolean);
}

/** Edits from `reference` to `hypothesis`, over the words of `reference` (0 when both are empty). */
export function wordErrorRate(reference: string, hypothesis: string): number {
  const said = words(reference);
  const heard = words(hypothesis);
  if (!said.length) return heard.length ? 1 : 0;
  let previous = Array.from({ length: heard.length + 1 }, (_, j) => j);
  for (let i = 1; i <= said.length; i++) {
    const current = [i];
    for (let j = 1; j <= heard.length; j++) {
      const substitution = (previous[j - 1] as number) + (said[i - 1] === heard[j - 1] ? 0 : 1);
      current.push(Math.min(substitution, (previous[j] as number) + 1, (current[j - 1] as number) + 1));
    }
    previous = current;
  }
  return (previous[heard.length] as number) / said.length;
}
