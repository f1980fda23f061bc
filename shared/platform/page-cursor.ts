import * as z from 'zod';
import { ValidationError } from './errors.ts';

/**
 * What a list's `nextCursor` carries (base64url JSON, opaque to clients): the sort key its page ended on, the next
 * page's number, and the listing (order and filters) it belongs to.
 */
const pageCursor = z.object({ after: z.string().min(1).max(512), page: z.int().min(2), listing: z.string() });

export type PageCursor = z.output<typeof pageCursor>;

/** `{ nextCursor }` naming the position a page ended on, when more follow (`after` given); else nothing. */
export function nextCursorAfter(after: string | undefined, page: number, listing: string): { nextCursor?: string } {
  if (after === undefined) return {};
  const cursor: PageCursor = { after, page: page + 1, listing };
  return { nextCursor: Buffer.from(JSON.stringify(cursor)).toString('base64url') };
}

/**
 * The position a `nextCursor` of this listing names, or a 400 naming `cursor` when it is not one (malformed, of
 * another listing, or with an `after` that `isPosition` rejects). `sameWhat` says what must not change.
 */
export function readPageCursor(
  cursor: string,
  listing: string,
  sameWhat: string,
  isPosition: (after: string) => boolean = () => true,
): { after: string; page: number } {
  let parsed: ReturnType<typeof pageCursor.safeParse> | undefined;
  try {
    parsed = pageCursor.safeParse(JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')));
  } catch {
    parsed = undefined;
  }
  if (!parsed?.success || parsed.data.listing !== listing || !isPosition(parsed.data.after)) {
    const message = `must be the nextCursor of a page of this listing, with the same ${sameWhat}`;
    throw new ValidationError(`Invalid query parameters: cursor ${message}`, { details: [{ field: 'cursor', message }] });
  }
  return { after: parsed.data.after, page: parsed.data.page };
}
