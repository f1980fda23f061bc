/**
 * The one kind of instruction the built-in model follows (rule (d3) of builtin-model.ts): a sentence of the agent's
 * prompt that says what to answer when the user mentions a topic. It makes a changed prompt change the built-in
 * model's answers in a way a test can predict, which replaying a conversation through a changed agent needs
 * (docs/agent-versions.md#replay).
 */

export interface PromptRule {
  /** Each topic a list of lower-case words, matched as consecutive whole words of the user's message. */
  topics: string[][];
  reply: string;
}

/**
 * `If the user mentions <topics>, say "<reply>"`: `mentions` or `asks about`; `user`, `caller` or `customer`;
 * `say`, `answer` or `reply`, with an optional `with` and `:`; topics apart by `or`. Case and a plural `s` are ignored.
 * A topic stops at the first comma or sentence end, so a rule never reaches into the next sentence.
 */
const ruleSentence = /\bif the (?:user|caller|customer) (?:mentions|asks about) ([^,.;!?\n"]+?),? (?:say|answer|reply)(?: with)?:? "([^"\n]*)"/gi;

const words = (text: string): string[] =>
  text
    .toLowerCase()
    .replace(/['’`]/g, '')
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);

/** The rules of a prompt, in the order they are written. */
export function promptRules(prompt: string): PromptRule[] {
  return [...prompt.matchAll(ruleSentence)].map(([, topics, reply]) => ({
    topics: topics!
      .split(/\s+or\s+/i)
      .map(words)
      .filter((topic) => topic.length > 0),
    reply: reply!,
  }));
}

/** `refund` and `refunds` are the same topic word. */
const sameWord = (said: string, topic: string) => said === topic || said === `${topic}s` || topic === `${said}s`;

function containsSequence(haystack: readonly string[], needle: readonly string[]): boolean {
  for (let start = 0; start + needle.length <= haystack.length; start++) {
    if (needle.every((word, offset) => sameWord(haystack[start + offset]!, word))) return true;
  }
  return false;
}

/** The reply of the first rule one of whose topics the message mentions. */
export function ruleReply(rules: readonly PromptRule[], message: string): string | undefined {
  const said = words(message);
  return rules.find((rule) => rule.topics.some((topic) => containsSequence(said, topic)))?.reply;
}
