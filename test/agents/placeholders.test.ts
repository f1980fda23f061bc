import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeUrlValue, fillPlaceholders, placeholderNames, sanitizeHeaderValue } from '../../shared/agents/placeholders.ts';

const identity = (value: string): string => value;
const wellFormed = (value: string): string => value.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');

describe('fillPlaceholders', () => {
  it('replaces known placeholders, tolerating whitespace inside the braces', () => {
    // Act
    const filled = fillPlaceholders('a={{a}} b={{ b }} c={{\tc\n}}', { a: '1', b: '2', c: '3' }, identity);

    // Assess
    expect(filled).toBe('a=1 b=2 c=3');
  });

  it('leaves unknown placeholders, and values without text, as they are', () => {
    // Act
    const filled = fillPlaceholders('{{known}} {{unknown}} {{gone}} {{fn}} {{ spaced }}', { known: 'k', gone: undefined, fn: () => 1 }, identity);

    // Assess
    expect(filled).toBe('k {{unknown}} {{gone}} {{fn}} {{ spaced }}');
  });

  it('ignores inherited properties such as constructor and __proto__', () => {
    // Act
    const filled = fillPlaceholders('{{constructor}} {{toString}} {{__proto__}}', {}, identity);

    // Assess
    expect(filled).toBe('{{constructor}} {{toString}} {{__proto__}}');
  });

  it('JSON-stringifies non-string values, and falls back to String for BigInt', () => {
    // Act
    const filled = fillPlaceholders(
      '{{n}}|{{t}}|{{z}}|{{o}}|{{l}}|{{big}}',
      { n: 42.5, t: true, z: null, o: { a: [1, 'x'] }, l: ['a', 'b'], big: 10n },
      identity,
    );

    // Assess
    expect(filled).toBe('42.5|true|null|{"a":[1,"x"]}|["a","b"]|10');
  });

  it('applies the encoding to values only, never to the template', () => {
    // Act
    const filled = fillPlaceholders('https://h.example/a b/{{v}}', { v: 'x y' }, encodeURIComponent);

    // Assess
    expect(filled).toBe('https://h.example/a b/x%20y');
  });

  it('does not expand placeholders that a value brings in (one pass)', () => {
    // Act
    const filled = fillPlaceholders('{{a}}', { a: '{{b}}', b: 'secret' }, identity);

    // Assess
    expect(filled).toBe('{{b}}');
  });

  it('lists the placeholder names once each', () => {
    // Act / Assess
    expect(placeholderNames('{{a}}/{{ b }}/{{a}}/{{not-a-name}}')).toEqual(['a', 'b']);
  });
});

describe('encodeUrlValue', () => {
  it('percent-encodes spaces, &, /, ?, # and unicode, and survives lone surrogates', () => {
    // Act / Assess
    expect(encodeUrlValue('a b&c/d?e#f=g')).toBe('a%20b%26c%2Fd%3Fe%23f%3Dg');
    expect(encodeUrlValue('Zürich 東京 😀')).toBe('Z%C3%BCrich%20%E6%9D%B1%E4%BA%AC%20%F0%9F%98%80');
    expect(encodeUrlValue('x\uD800y')).toBe('x%EF%BF%BDy');
  });
});

describe('sanitizeHeaderValue', () => {
  it('strips CR, LF and other controls, keeping tabs and text', () => {
    // Act / Assess
    expect(sanitizeHeaderValue('abc\r\nX-Injected: 1')).toBe('abcX-Injected: 1');
    expect(sanitizeHeaderValue('a\u0000b\u007fc\td')).toBe('abc\td');
    expect(sanitizeHeaderValue('Zürich')).toBe('Zürich');
  });
});

describe('properties', () => {
  /** Any UTF-16 string, lone surrogates included. */
  const anyString = fc.oneof(
    fc.string({ unit: 'binary' }),
    fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code)) }),
    fc.constantFrom('/', '..', '@evil.example', '#', '?', '\\', '//evil.example', ':8080', '%2F', '{{b}}'),
  );

  it('fillPlaceholders never throws, whatever the template and the values', () => {
    fc.assert(
      fc.property(
        anyString,
        fc.dictionary(fc.string(), fc.anything({ withBigInt: true, withNullPrototype: true, withBoxedValues: true, withMap: true, withSet: true })),
        (template, values) => {
          fillPlaceholders(template, values, encodeUrlValue);
          fillPlaceholders(template, values, sanitizeHeaderValue);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('a URL filled with arbitrary values still parses and keeps its host', () => {
    const template = 'https://api.example.com:8443/v1/{{a}}/items/{{b}}?q={{c}}&r={{ d }}#{{e}}';
    fc.assert(
      fc.property(fc.record({ a: anyString, b: anyString, c: anyString, d: anyString, e: anyString }), (values) => {
        // Act
        const url = new URL(fillPlaceholders(template, values, encodeUrlValue));

        // Assess
        expect(url.protocol).toBe('https:');
        expect(url.host).toBe('api.example.com:8443');
        expect(url.username).toBe('');
        expect(url.searchParams.get('q')).toBe(wellFormed(values.c));
        expect(url.searchParams.get('r')).toBe(wellFormed(values.d));
        expect([...url.searchParams.keys()]).toEqual(['q', 'r']);
      }),
      { numRuns: 500 },
    );
  });
});
