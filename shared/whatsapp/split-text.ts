/**
 * A reply as WhatsApp messages of at most `limit` characters (WhatsApp cannot stream, and refuses longer
 * bodies): cut at the last paragraph break, else line break, else space within the limit, else hard at the limit
 * (one unbroken word). The whitespace at a cut is dropped; nothing else is, and empty parts are never sent.
 */
export function splitForWhatsapp(text: string, limit: number): string[] {
  const parts: string[] = [];
  let rest = text.trim();
  while (rest.length > limit) {
    const window = rest.slice(0, limit + 1);
    const cut = [window.lastIndexOf('\n\n'), window.lastIndexOf('\n'), window.lastIndexOf(' ')].find((index) => index > 0) ?? limit;
    // Never split a surrogate pair (an emoji) when cutting hard.
    const at = cut === limit && /[\uD800-\uDBFF]/.test(rest[limit - 1] ?? '') ? limit - 1 : cut;
    parts.push(rest.slice(0, at).trimEnd());
    rest = rest.slice(at).trimStart();
  }
  if (rest) parts.push(rest);
  return parts;
}
