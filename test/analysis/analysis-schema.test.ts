import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { boundedTranscript, estimateTokens, renderTranscript, transcriptTokenBudget } from '../../shared/conversations/transcript.ts';
import { builtinAnalysis } from '../../shared/analysis/builtin-analysis.ts';
import { analysisPrompt } from '../../shared/analysis/structured-analysis.ts';
import { analysisOutputSchema, extractedDataSchema } from '../../shared/analysis/analysis-schemas.ts';
import { analysisConfigSchema, type AnalysisConfig, type ExtractionField } from '../../shared/agents/analysis-config-schemas.ts';
import { analysisResultSchema } from '../../shared/conversations/analysis-result-schemas.ts';
import type { Message } from '../../shared/conversations/session-schemas.ts';

const fieldName = fc.stringMatching(/^[a-z][a-z0-9_]{0,15}$/);
const enumValues = fc.uniqueArray(fc.stringMatching(/^[a-z]{1,8}$/), { minLength: 1, maxLength: 4 });
const field: fc.Arbitrary<ExtractionField> = fc.oneof(
  fc.record({ name: fieldName, type: fc.constantFrom('string', 'number', 'boolean', 'date') as fc.Arbitrary<ExtractionField['type']>, required: fc.boolean() }),
  fc.record({ name: fieldName, type: fc.constant('enum' as const), required: fc.boolean(), values: enumValues }),
);
const fields = fc.uniqueArray(field, { minLength: 1, maxLength: 6, selector: (entry) => entry.name });

/** A value of the field's declared type (or null). */
function valueOf(entry: ExtractionField): fc.Arbitrary<unknown> {
  const typed = (): fc.Arbitrary<unknown> => {
    switch (entry.type) {
      case 'string':
        return fc.string();
      case 'number':
        return fc.double({ noNaN: true, noDefaultInfinity: true });
      case 'boolean':
        return fc.boolean();
      case 'date':
        return fc.date({ min: new Date('1900-01-01'), max: new Date('2999-12-31'), noInvalidDate: true }).chain((date) => fc.constantFrom(date.toISOString(), date.toISOString().slice(0, 10)));
      case 'enum':
        return fc.constantFrom(...(entry.values ?? []));
    }
  };
  return fc.option(typed(), { nil: null });
}

/** A value of another type than the field's. */
function wrongValueOf(entry: ExtractionField): fc.Arbitrary<unknown> {
  switch (entry.type) {
    case 'string':
      return fc.oneof(fc.integer(), fc.boolean());
    case 'number':
      return fc.oneof(fc.string(), fc.boolean());
    case 'boolean':
      return fc.oneof(fc.string(), fc.integer(), fc.constantFrom('true', 'yes'));
    case 'date':
      return fc.oneof(fc.integer(), fc.constantFrom('tomorrow', '2026-13-01', '25/11/2026', '2026-11-25T10:00:00'));
    case 'enum':
      return fc.string().filter((text) => !(entry.values ?? []).includes(text));
  }
}

const recordOf = (entries: ExtractionField[]) => fc.tuple(...entries.map(valueOf)).map((values) => Object.fromEntries(entries.map((entry, index) => [entry.name, values[index]])));

describe('extractedDataSchema', () => {
  it('accepts every configured field with a value of its type or null', () => {
    fc.assert(
      fc.property(fields.chain((entries) => fc.tuple(fc.constant(entries), recordOf(entries))), ([entries, record]) => {
        expect(extractedDataSchema(entries).safeParse(record).success).toBe(true);
      }),
    );
  });

  it('rejects a value of another type in any one field', () => {
    fc.assert(
      fc.property(
        fields.chain((entries) => fc.tuple(fc.constant(entries), recordOf(entries), fc.nat(entries.length - 1))).chain(([entries, record, index]) =>
          fc.tuple(fc.constant(entries), fc.constant(record), fc.constant(entries[index]!), wrongValueOf(entries[index]!)),
        ),
        ([entries, record, wrong, value]) => {
          expect(extractedDataSchema(entries).safeParse({ ...record, [wrong.name]: value }).success).toBe(false);
        },
      ),
    );
  });

  it('rejects a missing field and a field that is not configured', () => {
    fc.assert(
      fc.property(fields.chain((entries) => fc.tuple(fc.constant(entries), recordOf(entries))), ([entries, record]) => {
        const schema = extractedDataSchema(entries);
        const { [entries[0]!.name]: _dropped, ...missing } = record;
        expect(schema.safeParse(missing).success).toBe(false);
        expect(schema.safeParse({ ...record, not_configured_field: null }).success).toBe(false);
      }),
    );
  });

  it('takes ISO 8601 dates with an offset, and enum values exactly as configured', () => {
    const schema = extractedDataSchema([
      { name: 'day', type: 'date', required: false },
      { name: 'plan', type: 'enum', values: ['basic', 'premium'], required: false },
    ]);
    expect(schema.safeParse({ day: '2026-11-25', plan: 'basic' }).success).toBe(true);
    expect(schema.safeParse({ day: '2026-11-25T10:00:00+01:00', plan: 'premium' }).success).toBe(true);
    expect(schema.safeParse({ day: '2026-11-25T10:00:00', plan: 'basic' }).success).toBe(false);
    expect(schema.safeParse({ day: '2026-11-25', plan: 'Premium' }).success).toBe(false);
  });
});

const message = (index: number, role: Message['role'], content: string): Message => ({
  id: `msg_${String(index).padStart(32, '0')}`,
  sessionId: 's',
  role,
  content,
  metadata: {},
  createdAt: new Date(Date.UTC(2026, 10, 25, 10, 0, index)).toISOString(),
});

const config: fc.Arbitrary<AnalysisConfig> = fc
  .record({
    intents: fc.uniqueArray(fc.record({ name: fc.stringMatching(/^[a-z]{3,10}$/).filter((name) => name !== 'other'), description: fc.lorem({ maxCount: 6 }) }), {
      minLength: 1,
      maxLength: 4,
      selector: (intent) => intent.name,
    }),
    checklist: fc.uniqueArray(fc.lorem({ maxCount: 3 }).filter((item) => item.trim().length > 0), { maxLength: 4 }),
    fields,
    enabled: fc.record({ intent: fc.boolean(), resolution: fc.boolean(), sentiment: fc.boolean() }),
  })
  .map(({ intents, checklist, fields: entries, enabled }) =>
    analysisConfigSchema.parse({
      intentRecognition: { enabled: enabled.intent, intents },
      resolution: { enabled: enabled.resolution, checklist },
      sentiment: { enabled: enabled.sentiment },
      dataExtraction: { fields: entries },
    }),
  );

/** An analysed conversation has at least one user message (without one the analysis is SKIPPED). */
const conversation = fc.array(fc.tuple(fc.constantFrom('USER', 'ASSISTANT', 'TOOL') as fc.Arbitrary<Message['role']>, fc.string({ maxLength: 300 })), { minLength: 1, maxLength: 30 });

describe('the built-in analysis', () => {
  it('always answers what a provider model must answer (the schema built from the configuration), and a valid stored result', () => {
    fc.assert(
      fc.property(config, conversation, (analysis, turns) => {
        const transcript = boundedTranscript([message(0, 'USER', 'Hello'), ...turns.map(([role, content], index) => message(index + 1, role, content))]);
        const output = builtinAnalysis({ transcript, config: analysis, language: 'en', endedReason: 'USER_CLOSED' });
        const parsed = analysisOutputSchema(analysis).safeParse(output);
        expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
        expect(Object.keys(output.extractedData ?? {}).sort()).toEqual(analysis.dataExtraction!.fields.map((entry) => entry.name).sort());
        const stored = { status: 'COMPLETED', model: { id: 'm', provider: 'builtin', name: 'builtin-assistant' }, completedAt: '2026-11-25T10:00:00.000Z', ...output };
        expect(analysisResultSchema.safeParse(stored).success).toBe(true);
      }),
    );
  });

  it('extracts typed values after the field name, the latest mention winning', () => {
    const transcript = boundedTranscript([
      message(1, 'USER', 'My orderId is ZX-9. Delivery date: 2026-02-31, count = 4'),
      message(2, 'USER', 'Sorry, order id: ZX-10. I want the premium tier on 2026-03-01, express no.'),
    ]);
    const output = builtinAnalysis({
      transcript,
      config: analysisConfigSchema.parse({
        dataExtraction: {
          fields: [
            { name: 'order_id', type: 'string' },
            { name: 'delivery_date', type: 'date' },
            { name: 'count', type: 'number' },
            { name: 'express', type: 'boolean' },
            { name: 'tier', type: 'enum', values: ['basic', 'premium'] },
            { name: 'coupon', type: 'string' },
          ],
        },
      }),
    });
    // 2026-02-31 is no date, so the date written anywhere (the enum and date rule) is taken instead.
    expect(output.extractedData).toEqual({ order_id: 'ZX-10', delivery_date: '2026-03-01', count: 4, express: false, tier: 'premium', coupon: null });
  });
  it('finds an identifier by its description when its name is never written, and nothing else so', () => {
    const transcript = boundedTranscript([message(1, 'USER', 'Hello, my order no. 7 is late.'), message(2, 'USER', 'where is my order ORD-1234?')]);
    const output = builtinAnalysis({
      transcript,
      config: analysisConfigSchema.parse({
        dataExtraction: {
          fields: [
            { name: 'order_id', type: 'string', description: 'the order number the customer gives' },
            { name: 'reason', type: 'string', description: 'why the order is late' },
            { name: 'parcels', type: 'number', description: 'how many boxes arrived' },
            { name: 'gift', type: 'boolean', description: 'whether the order is a gift' },
          ],
        },
      }),
    });
    expect(output.extractedData).toEqual({ order_id: 'ORD-1234', reason: null, parcels: null, gift: null });
  });
});

describe('the transcript budget', () => {
  it('holds for a 500-message session, keeping its first and last messages', () => {
    const messages = Array.from({ length: 500 }, (_, index) => message(index, index % 2 ? 'ASSISTANT' : 'USER', `Message ${index}: ${'lorem ipsum dolor sit amet '.repeat(20)}`));
    const transcript = boundedTranscript(messages);
    expect(transcript.omitted).toBeGreaterThan(0);
    expect(transcript.lines[0]!.messageId).toBe(messages[0]!.id);
    expect(transcript.lines.at(-1)!.messageId).toBe(messages[499]!.id);
    expect(estimateTokens(renderTranscript(transcript))).toBeLessThanOrEqual(transcriptTokenBudget);
    const prompt = analysisPrompt({ transcript, config: {} });
    expect(prompt).toContain(`[… ${transcript.omitted} messages left out …]`);
  });

  it('keeps everything that fits, and cuts one huge message rather than the rest', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ maxLength: 2_000 }), { minLength: 1, maxLength: 80 }), fc.integer({ min: 500, max: 20_000 }), (texts, budget) => {
        const transcript = boundedTranscript(texts.map((text, index) => message(index, 'USER', text)), budget);
        expect(transcript.lines.length + transcript.omitted).toBe(texts.length);
        expect(estimateTokens(renderTranscript(transcript))).toBeLessThanOrEqual(budget);
      }),
    );
  });
});
