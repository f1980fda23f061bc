/**
 * How the built-in model picks a tool for a message that asks in plain words ("What is the weather in Paris?"):
 * rule (d2) of `builtin-model.ts`. Deterministic word overlap between the message and each tool's name,
 * description and parameters, then the arguments read from the message; docs/models.md states the rule.
 */
import type { JSONSchema7, LanguageModelV4FunctionTool } from '@ai-sdk/provider';

/** A tool is called when it scores at least this: one word of its name, or two of its description and parameters. */
export const toolMatchThreshold = 2;

const stopWords = new Set(
  'a an and any are as at be but by can could did do does for from get give had has have how i if in into is it its like me my no not of on or our please show so tell than that the their them then there these they this to too us was we were what when where which who why will with would you your tool api call use return'.split(' '),
);

/** Lower-case words of letters and digits, names split (`GET_WEATHER`, `getWeather` → get, weather), a plural `s` dropped. */
function words(text: string): string[] {
  return (text.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).map((word) =>
    word.length > 3 && word.endsWith('s') && !word.endsWith('ss') ? word.slice(0, -1) : word,
  );
}

const keywords = (text: string): Set<string> => new Set(words(text).filter((word) => word.length >= 2 && !stopWords.has(word)));

type Properties = Record<string, JSONSchema7>;

function propertiesOf(tool: LanguageModelV4FunctionTool): { properties: Properties; required: string[] } {
  const schema = tool.inputSchema;
  const properties = Object.fromEntries(
    Object.entries(schema.properties ?? {}).filter((entry): entry is [string, JSONSchema7] => typeof entry[1] === 'object'),
  );
  return { properties, required: schema.required ?? [] };
}

/** 2 for each word of the message in the tool's name, 1 for each other word of the message in its description or parameters. */
function score(said: Set<string>, tool: LanguageModelV4FunctionTool): number {
  const named = keywords(tool.name);
  const { properties } = propertiesOf(tool);
  const described = keywords([tool.description ?? '', ...Object.entries(properties).map(([name, property]) => `${name} ${property.description ?? ''}`)].join(' '));
  let total = 0;
  for (const word of said) total += named.has(word) ? 2 : described.has(word) ? 1 : 0;
  return total;
}

const identifierWords = new Set(['id', 'number', 'code', 'reference', 'ref']);

/** A value for one parameter, read from the message; undefined when the message holds none. */
function argumentFrom(text: string, name: string, property: JSONSchema7): unknown {
  const about = words(`${name} ${property.description ?? ''}`);
  const type = Array.isArray(property.type) ? property.type[0] : property.type;
  if (property.enum) {
    return property.enum.find((value: unknown) => typeof value === 'string' && new RegExp(`(?<![\\p{L}\\p{N}])${escapeRegExp(value)}(?![\\p{L}\\p{N}])`, 'iu').test(text));
  }
  if (type === 'number' || type === 'integer') {
    const found = /-?\d+(?:\.\d+)?/.exec(text)?.[0];
    return found === undefined || (type === 'integer' && found.includes('.')) ? undefined : Number(found);
  }
  if (type !== undefined && type !== 'string') return undefined;
  if (property.format === 'email' || about.includes('email')) return /[\w.+-]+@[\w-]+(?:\.[\w-]+)+/.exec(text)?.[0];
  const quoted = /"([^"]+)"/.exec(text)?.[1];
  if (quoted) return quoted;
  if (about.some((word) => identifierWords.has(word))) return /(?<![\p{L}\p{N}])(?=[\p{L}\p{N}-]*\p{N})[\p{L}\p{N}][\p{L}\p{N}-]*/u.exec(text)?.[0];
  return properName(text);
}

/** Capitalised words after `in`, `at`, `for`, `from`, `to`, `near`, `of` or `about` (`in New York`), else the first capitalised words not opening the message. */
function properName(text: string): string | undefined {
  const name = "\\p{Lu}[\\p{L}'’-]*(?:\\s+\\p{Lu}[\\p{L}'’-]*)*";
  const afterPreposition = new RegExp(`(?<![\\p{L}\\p{N}])(?:in|at|for|from|to|near|of|about)\\s+(${name})`, 'u').exec(text)?.[1];
  if (afterPreposition) return afterPreposition;
  const opening = /^\s*\S+/.exec(text)?.[0].length ?? 0;
  return [...text.matchAll(new RegExp(`(?<![\\p{L}\\p{N}])${name}`, 'gu'))].find((match) => match.index >= opening && match[0] !== 'I')?.[0];
}

export function escapeRegExp(value: string): string {
  return value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * The tool a message asks for in plain words, with the arguments read from it: the best scoring tool at or above
 * the threshold (the first offered among equals) whose required parameters all have a value in the message.
 */
export function toolAskedFor(text: string, tools: readonly LanguageModelV4FunctionTool[]): { tool: LanguageModelV4FunctionTool; input: Record<string, unknown> } | undefined {
  const said = keywords(text);
  const ranked = tools
    .map((tool, index) => ({ tool, index, score: score(said, tool) }))
    .filter((candidate) => candidate.score >= toolMatchThreshold)
    .sort((a, b) => b.score - a.score || a.index - b.index);
  for (const { tool } of ranked) {
    const { properties, required } = propertiesOf(tool);
    const input: Record<string, unknown> = {};
    for (const [name, property] of Object.entries(properties)) {
      const value = argumentFrom(text, name, property);
      if (value !== undefined) input[name] = value;
    }
    if (required.every((name) => name in input)) return { tool, input };
  }
  return undefined;
}
