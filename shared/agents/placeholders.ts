/**
 * `{{name}}` placeholders of API tool URLs and headers (the same syntax the tool schema accepts: letters, digits and
 * underscores, whitespace inside the braces tolerated, e.g. `{{ city }}`).
 */

/** One placeholder; group 1 is its name. Global: use with `replace`/`matchAll` only. */
export const placeholderPattern = /\{\{\s*([A-Za-z0-9_]+)\s*\}\}/g;

/** Lone UTF-16 surrogates, which `encodeURIComponent` refuses and no encoding can carry. */
const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** The text a value stands for: strings as they are, anything else as JSON; undefined when it has no text. */
function valueText(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string') return value;
  try {
    const json = JSON.stringify(value);
    if (json !== undefined) return json;
  } catch {
    // A BigInt or a cycle: fall back to the value's own string form below.
  }
  if (typeof value === 'function' || typeof value === 'symbol') return undefined;
  try {
    return String(value);
  } catch {
    return undefined;
  }
}

/**
 * Replaces each `{{name}}` of `template` with `encode(text of values[name])` in one pass (replaced text is never
 * scanned again, so a value cannot inject further placeholders). Only own properties of `values` count; unknown
 * names, and values that have no text (undefined, functions, symbols), leave the placeholder as it is. Non-string
 * values are JSON-stringified. Lone surrogates become U+FFFD before encoding, so `encodeURIComponent` never throws.
 * Callers merge tool-call arguments over session variables (arguments win) before calling.
 */
export function fillPlaceholders(template: string, values: Record<string, unknown>, encode: (value: string) => string): string {
  return template.replace(placeholderPattern, (whole: string, name: string) => {
    if (!Object.hasOwn(values, name)) return whole;
    const text = valueText(values[name]);
    return text === undefined ? whole : encode(text.replace(loneSurrogate, '\uFFFD'));
  });
}

/** The names of the placeholders in a template, each once, in order of first appearance. */
export function placeholderNames(template: string): string[] {
  return [...new Set(Array.from(template.matchAll(placeholderPattern), (match) => match[1] as string))];
}

/** Encoding for URL placeholders: every reserved character is percent-encoded, so a value cannot change the host. */
export function encodeUrlValue(value: string): string {
  return encodeURIComponent(value.replace(loneSurrogate, '\uFFFD'));
}

/**
 * Header values are not encoded, but CR and LF (header injection) and the other control characters node:http would
 * refuse (all C0 controls but tab, and DEL) are stripped.
 */
export function sanitizeHeaderValue(value: string): string {
  return value.replace(/[\u0000-\u0008\u000A-\u001F\u007F]/g, '');
}
