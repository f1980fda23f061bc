import * as z from 'zod';

export const idParams = z.object({ id: z.uuid({ error: 'must be a UUID' }) });

export const maxPageSize = 100;

/** Out-of-range or unparsable values fall back to the nearest valid one: pagination never answers 400. */
function clampedInteger(fallback: number, min: number, max: number) {
  return z.string().optional().transform((raw) => {
    const parsed = raw !== undefined && /^-?\d+$/.test(raw.trim()) ? Number(raw) : Number.NaN;
    if (!Number.isSafeInteger(parsed)) return fallback;
    return Math.min(Math.max(parsed, min), max);
  });
}

export const paginationQuery = z.object({
  page: clampedInteger(1, 1, Number.MAX_SAFE_INTEGER),
  limit: clampedInteger(10, 1, maxPageSize),
});

/** `sort=<field>:asc|desc`, restricted to the given fields; anything else is a 400 naming the allowed ones. */
export function sortQuery<const Field extends string>(fields: readonly [Field, ...Field[]], fallback: `${Field}:${'asc' | 'desc'}`) {
  const pattern = new RegExp(`^(${fields.join('|')}):(asc|desc)$`);
  return z
    .string()
    .regex(pattern, { error: `must be <field>:asc or <field>:desc with field one of ${fields.join(', ')}` })
    .default(fallback)
    .transform((value) => {
      const [field, direction] = value.split(':') as [Field, 'asc' | 'desc'];
      return { field, direction };
    });
}

export const booleanQuery = z.enum(['true', 'false'], { error: 'must be true or false' }).transform((v) => v === 'true');

export const timestamp = z.iso.datetime({ offset: true, error: 'must be an RFC 3339 timestamp' });

/** A required human string: trimmed, not empty, bounded. */
export const requiredText = (max: number) => z.string().trim().min(1, { error: 'must not be empty' }).max(max);

export const optionalText = (max: number) => z.string().trim().max(max);

/** The spec's page counters. */
export const pageCounts = z.object({ page: z.int().min(1), limit: z.int().min(1), total: z.int().min(0), totalPages: z.int().min(0) });

/** A page of a listing, as every paginated route answers it. */
export const pageOf = <Item extends z.ZodType>(item: Item) => z.object({ data: z.array(item), pagination: pageCounts });

/** A timestamp the API writes: always UTC (`toISOString`). */
export const instant = z.iso.datetime();

/** E.164: `+`, a country code that does not start with 0, at most 15 digits in all. */
export const e164 = z.string().trim().regex(/^\+[1-9]\d{6,14}$/, { error: 'must be an E.164 number such as +15550100' });

/** A free-form JSON object as the client stored it (metadata, variables, tool schemas). */
export const jsonRecord = z.record(z.string(), z.unknown());

export interface Page<T> {
  data: T[];
  pagination: { page: number; limit: number; total: number; totalPages: number };
}

/** Slices one page out of an already filtered and sorted list. */
export function paginate<T>(items: readonly T[], page: number, limit: number): Page<T> {
  const start = (page - 1) * limit;
  return {
    data: start < items.length ? items.slice(start, start + limit) : [],
    pagination: { page, limit, total: items.length, totalPages: Math.ceil(items.length / limit) },
  };
}

/** Compares two records on one field for `sort`; strings by code point so results are stable across locales. */
export function compareBy<T>(field: keyof T, direction: 'asc' | 'desc'): (a: T, b: T) => number {
  const sign = direction === 'asc' ? 1 : -1;
  return (a, b) => {
    const left = a[field];
    const right = b[field];
    if (left === right) return 0;
    if (left === undefined || left === null) return 1;
    if (right === undefined || right === null) return -1;
    return (left < right ? -1 : 1) * sign;
  };
}
