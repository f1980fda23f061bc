import * as z from 'zod';

/**
 * Nesting levels a free-form object may have, itself included. DynamoDB stores at most 32 levels in an item, and
 * the platform wraps these objects in up to three more (an event's payload, its metadata, the session variables).
 */
export const maxStorableDepth = 20;

/**
 * Property names no stored object can keep. The DynamoDB marshaller writes and reads maps through plain objects,
 * where `__proto__` sets the prototype instead of adding a property (the entry would vanish), and it takes an own
 * `constructor` for the object's class (the write would fail). zod's records skip `__proto__` before any schema sees
 * it, so the body parser refuses both anywhere in a request body (`unacceptableBodyPart`).
 */
export const unstorablePropertyNames: ReadonlySet<string> = new Set(['__proto__', 'constructor']);

export const unstorableNameMessage = 'property names __proto__ and constructor cannot be stored';

/**
 * U+FFFE and U+FFFF are noncharacters that SQS refuses in a message, and EventBridge writes the events it hands to a
 * queue itself: text holding them could not reach webhooks on AWS, so the API refuses them up front
 * (docs/api-conventions.md#text).
 */
const noncharacter = /[\ufffe\uffff]/;

export const noncharacterMessage = 'must not contain U+FFFE or U+FFFF';

interface Problem {
  path: (string | number)[];
  message: string;
}

/**
 * The first part of a parsed JSON body the API refuses whatever the route: a property named in
 * `unstorablePropertyNames`, or a string or property name holding a noncharacter. Walked without recursion, keeping
 * only parent links, since a body may nest deeper than the stack.
 */
export function unacceptableBodyPart(document: unknown): Problem | undefined {
  interface Visit {
    value: unknown;
    parent?: Visit;
    key?: string | number;
  }
  const pathOf = (visit: Visit): (string | number)[] => {
    const path: (string | number)[] = [];
    for (let at: Visit | undefined = visit; at?.parent; at = at.parent) path.push(at.key as string | number);
    return path.reverse();
  };
  const pending: Visit[] = [{ value: document }];
  for (let visit = pending.pop(); visit; visit = pending.pop()) {
    const { value } = visit;
    if (typeof value === 'string') {
      if (noncharacter.test(value)) return { path: pathOf(visit), message: noncharacterMessage };
      continue;
    }
    if (typeof value !== 'object' || value === null) continue;
    if (Array.isArray(value)) {
      value.forEach((item: unknown, index) => pending.push({ value: item, parent: visit, key: index }));
      continue;
    }
    for (const [name, child] of Object.entries(value)) {
      if (unstorablePropertyNames.has(name)) return { path: [...pathOf(visit), name], message: unstorableNameMessage };
      if (noncharacter.test(name)) return { path: [...pathOf(visit), name], message: noncharacterMessage };
      pending.push({ value: child, parent: visit, key: name });
    }
  }
  return undefined;
}

/**
 * The first part of a JSON value that DynamoDB cannot store as a nested map: a number outside what it and the SDK
 * accept (0, or a magnitude from 1e-130 to Number.MAX_SAFE_INTEGER), an empty property name, or too deep a nesting.
 */
function unstorablePart(value: unknown, path: (string | number)[], depth: number): Problem | undefined {
  if (typeof value === 'number') {
    const magnitude = Math.abs(value);
    if (magnitude > Number.MAX_SAFE_INTEGER || (magnitude !== 0 && magnitude < 1e-130)) {
      return { path, message: `numbers must be 0 or between 1e-130 and ${Number.MAX_SAFE_INTEGER} in magnitude` };
    }
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  if (depth > maxStorableDepth) return { path, message: `must not nest deeper than ${maxStorableDepth} levels` };
  for (const [key, child] of Object.entries(value)) {
    if (key === '') return { path: [...path, key], message: 'property names must not be empty' };
    const problem = unstorablePart(child, [...path, Array.isArray(value) ? Number(key) : key], depth + 1);
    if (problem) return problem;
  }
  return undefined;
}

/**
 * A free-form JSON object that the API stores as the client sent it (metadata, session variables, tool schemas):
 * bounded in size, and refused with the path of the first part DynamoDB could not store, so a client's mistake is a
 * 400 naming the field rather than a failed write. (Names DynamoDB cannot store are refused earlier, by the body
 * parser: see `unstorablePropertyNames`.)
 */
export function storableJsonObject(options: { maxBytes: number; key?: z.ZodType<string> }) {
  return z
    .record(options.key ?? z.string(), z.unknown())
    .refine((value) => Buffer.byteLength(JSON.stringify(value), 'utf8') <= options.maxBytes, {
      error: `must serialize to at most ${options.maxBytes} bytes`,
    })
    .superRefine((value, ctx) => {
      const problem = unstorablePart(value, [], 1);
      if (problem) ctx.addIssue({ code: 'custom', path: problem.path, message: problem.message });
    });
}
