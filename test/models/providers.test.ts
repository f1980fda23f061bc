import { jsonSchema, stepCountIs, streamText, tool, type TextStreamPart, type ToolSet } from 'ai';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { checkSettingsTogether, parseConfig } from '../../shared/platform/config.ts';
import { builtinModels, createModelCatalog, modelId } from '../../shared/models/model-catalog.ts';
import { createLanguageModel, createTranscriber } from '../../shared/models/model-providers.ts';
import type { Model, ModelProvider, ModelType } from '../../shared/models/model-schemas.ts';
import { startOpenAIStub, stubText, type OpenAIStub, type OpenAIStubOptions } from '../support/openai-stub.ts';

const catalogModel = (provider: ModelProvider, name: string, type: ModelType = 'LLM'): Model => ({
  id: modelId(provider, type, name),
  type,
  provider,
  name,
  isDefault: false,
  acceptsImages: false,
  source: 'deployment',
});

const objectSchema = jsonSchema<Record<string, unknown>>({ type: 'object', additionalProperties: true });

let stub: OpenAIStub | undefined;
afterEach(async () => {
  await stub?.close();
  stub = undefined;
  vi.restoreAllMocks();
});

async function stubModel(options: OpenAIStubOptions = {}) {
  stub = await startOpenAIStub(options);
  const config = parseConfig({ OPENAI_COMPATIBLE_BASE_URL: stub.baseUrl, OPENAI_COMPATIBLE_API_KEY: 'sk-stub-key', OPENAI_COMPATIBLE_MODELS: 'stub-model' });
  return { stub, model: createLanguageModel(catalogModel('openai-compatible', 'stub-model'), config) };
}

async function consume(result: { fullStream: AsyncIterable<TextStreamPart<ToolSet>> }) {
  const parts: TextStreamPart<ToolSet>[] = [];
  let failure: unknown;
  try {
    for await (const part of result.fullStream) parts.push(part);
  } catch (error) {
    failure = error;
  }
  const deltas = parts.flatMap((part) => (part.type === 'text-delta' ? [part.text] : []));
  return { parts, deltas, text: deltas.join(''), failure, types: parts.map((part) => part.type) };
}

describe('createLanguageModel', () => {
  it('gives the built-in model for the built-in LLM, once per process', () => {
    // Act
    const first = createLanguageModel(catalogModel('builtin', builtinModels.llm), parseConfig({}));
    const second = createLanguageModel(catalogModel('builtin', builtinModels.llm), parseConfig({}));

    // Assess
    expect(first).toMatchObject({ specificationVersion: 'v4', provider: 'builtin', modelId: 'builtin-assistant' });
    expect(second).toBe(first);
  });

  it.each([
    ['builtin', builtinModels.stt, 'STT'],
    ['builtin', builtinModels.tts, 'TTS'],
  ] as const)('refuses the %s %s model, which is no LLM', (provider, name, type) => {
    expect(() => createLanguageModel(catalogModel(provider, name, type), parseConfig({}))).toThrow(/not an LLM/);
  });

  it('refuses an OpenAI-compatible model when no base URL is configured', () => {
    expect(() => createLanguageModel(catalogModel('openai-compatible', 'gpt-x'), parseConfig({}))).toThrow(/OPENAI_COMPATIBLE_BASE_URL/);
  });

  it('builds a Bedrock model without touching the network or credentials', () => {
    // Prepare
    const fetchSpy = vi.spyOn(globalThis, 'fetch');
    const config = parseConfig({ AWS_REGION: 'eu-west-1', BEDROCK_MODELS: 'anthropic.claude-3-5-haiku-20241022-v1:0' });

    // Act
    const model = createLanguageModel(catalogModel('bedrock', 'anthropic.claude-3-5-haiku-20241022-v1:0'), config);
    const again = createLanguageModel(catalogModel('bedrock', 'anthropic.claude-3-5-haiku-20241022-v1:0'), config);

    // Assess
    expect(model.specificationVersion).toBe('v4');
    expect(model.provider).toContain('bedrock');
    expect(model.modelId).toBe('anthropic.claude-3-5-haiku-20241022-v1:0');
    expect(again).toBe(model);
    expect(fetchSpy).not.toHaveBeenCalled();
  });
});

describe('an OpenAI-compatible model against the local stub', () => {
  it('streams the 20 tokens, the text being their concatenation, with the key as a Bearer token', async () => {
    // Prepare
    const { stub, model } = await stubModel();

    // Act
    const result = streamText({ model, prompt: 'Hello' });
    const { deltas, text, failure } = await consume(result);

    // Assess
    expect(failure).toBeUndefined();
    expect(deltas).toHaveLength(20);
    expect(text).toBe(stubText(20));
    expect(await result.text).toBe(stubText(20));
    expect(await result.finishReason).toBe('stop');
    expect((await result.usage).outputTokens).toBe(20);
    expect(model).toMatchObject({ provider: expect.stringContaining('openai-compatible'), modelId: 'stub-model' });
    expect(stub.requests).toHaveLength(1);
    expect(stub.requests[0]!.path).toBe('/v1/chat/completions');
    expect(stub.requests[0]!.headers.authorization).toBe('Bearer sk-stub-key');
    expect(stub.requests[0]!.body).toMatchObject({
      model: 'stub-model',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'Hello' }],
    });
  });

  it('assembles a tool call streamed in split deltas', async () => {
    // Prepare
    const args = { city: 'Paris', options: { days: 3, units: 'metric' } };
    const { stub, model } = await stubModel({ toolCall: { name: 'get_weather', arguments: args } });

    // Act
    const result = streamText({ model, prompt: 'Weather?', tools: { get_weather: tool({ inputSchema: objectSchema }) } });
    const { parts, types, failure } = await consume(result);

    // Assess
    expect(failure).toBeUndefined();
    const calls = parts.filter((part) => part.type === 'tool-call');
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ toolName: 'get_weather', input: args, toolCallId: 'call_stub_1' });
    expect(types.filter((type) => type === 'tool-input-delta')).toHaveLength(3);
    expect(await result.finishReason).toBe('tool-calls');
    expect(stub.requests[0]!.body.tools).toEqual([
      { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', additionalProperties: true } } },
    ]);
  });

  it('sends the tool result back and streams the answer', async () => {
    // Prepare
    const { stub, model } = await stubModel({ toolCall: { name: 'get_weather', arguments: { city: 'Paris' } } });
    const tools = { get_weather: tool({ inputSchema: objectSchema, execute: async () => ({ temp: 21 }) }) };

    // Act
    const result = streamText({ model, prompt: 'Weather?', tools, stopWhen: stepCountIs(3) });
    const { text, failure } = await consume(result);

    // Assess
    expect(failure).toBeUndefined();
    expect(text).toBe(stubText(20));
    expect(stub.requests).toHaveLength(2);
    expect(stub.requests[1]!.body.messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'call_stub_1', content: '{"temp":21}' });
  });

  it('rejects the stream when the provider drops the connection mid-stream, after the deltas already sent', async () => {
    // Prepare
    const { model } = await stubModel({ failAfterTokens: 5 });
    const onError = vi.fn();

    // Act
    const result = streamText({ model, prompt: 'Hello', onError });
    const { deltas, types, failure } = await consume(result);

    // Assess: no error part and no finish: iterating fullStream throws, and so do the result's promises.
    expect(deltas).toEqual(stubText(5).match(/\s*\S+/g));
    expect(types).not.toContain('finish');
    expect(types).not.toContain('error');
    expect(failure).toMatchObject({ name: 'AI_APICallError', isRetryable: true, cause: { message: 'terminated' } });
    await expect(result.text).rejects.toMatchObject({ name: 'AI_APICallError' });
    expect(onError).not.toHaveBeenCalled();
  });

  it('ends the stream with an error part when the provider sends an error event or a broken chunk', async () => {
    for (const failMode of ['error-event', 'malformed'] as const) {
      // Prepare
      const { model } = await stubModel({ failAfterTokens: 5, failMode });
      const onError = vi.fn();

      // Act
      const result = streamText({ model, prompt: 'Hello', onError });
      const { deltas, parts, failure } = await consume(result);
      await stub?.close();
      stub = undefined;

      // Assess: the stream completes, with an `error` part, and finishes with reason `error`.
      expect(failure).toBeUndefined();
      expect(deltas).toHaveLength(5);
      const errors = parts.filter((part) => part.type === 'error');
      expect(errors).toHaveLength(1);
      expect(errors[0]).toMatchObject({ error: { name: failMode === 'error-event' ? 'AI_StreamProviderError' : 'AI_JSONParseError' } });
      expect(parts.at(-1)).toMatchObject({ type: 'finish', finishReason: 'error' });
      expect(await result.text).toBe(stubText(5));
      expect(onError).toHaveBeenCalledTimes(1);
    }
  });

  it('surfaces an HTTP error before streaming as an error part (no retries here: the SDK backs off 2 s, then 4 s)', async () => {
    // Prepare
    const { stub, model } = await stubModel({ failStatus: 503 });

    // Act
    const result = streamText({ model, prompt: 'Hello', maxRetries: 0, onError: () => {} });
    const { parts, failure } = await consume(result);

    // Assess
    expect(failure).toBeUndefined();
    expect(stub.requests).toHaveLength(1);
    expect(parts.map((part) => part.type)).toEqual(['start', 'error']);
    expect(parts[1]).toMatchObject({ error: { name: 'AI_APICallError', statusCode: 503, isRetryable: true } });
    await expect(result.text).rejects.toMatchObject({ name: 'AI_NoOutputGeneratedError' });
  });
});

describe('createTranscriber', () => {
  it('transcribes with an OpenAI-compatible STT model through /audio/transcriptions, the format named by the file extension', async () => {
    // Prepare
    stub = await startOpenAIStub({ transcript: (bytes, filename) => `I heard ${bytes.length} bytes of ${filename}` });
    const config = parseConfig({ OPENAI_COMPATIBLE_BASE_URL: stub.baseUrl, OPENAI_COMPATIBLE_API_KEY: 'sk-stub-key', OPENAI_COMPATIBLE_STT_MODELS: 'whisper-1' });
    const transcriber = createTranscriber(catalogModel('openai-compatible', 'whisper-1', 'STT'), config)!;

    // Act
    const text = await transcriber.transcribe(new Uint8Array(321), 'audio/ogg; codecs=opus');

    // Assess
    expect(text).toBe('I heard 321 bytes of voice-note.ogg');
    expect(stub.requests.map((request) => [request.path, request.headers.authorization, request.body])).toEqual([
      ['/v1/audio/transcriptions', 'Bearer sk-stub-key', { model: 'whisper-1', filename: 'voice-note.ogg', bytes: 321 }],
    ]);
  });

  it("rejects with the provider's reason a format it cannot read", async () => {
    // Prepare
    stub = await startOpenAIStub();
    const config = parseConfig({ OPENAI_COMPATIBLE_BASE_URL: stub.baseUrl, OPENAI_COMPATIBLE_STT_MODELS: 'whisper-1' });
    const transcriber = createTranscriber(catalogModel('openai-compatible', 'whisper-1', 'STT'), config)!;

    // Act, Assess
    await expect(transcriber.transcribe(new Uint8Array(10), 'audio/amr')).rejects.toThrow(/answered 400: Invalid file format/);
  });

  it('gives none for the built-in STT model, which transcribes nothing, nor for a model of another type', () => {
    const config = parseConfig({});
    expect(createTranscriber(catalogModel('builtin', 'builtin-stt', 'STT'), config)).toBeUndefined();
    expect(createTranscriber(catalogModel('builtin', 'builtin-assistant'), config)).toBeUndefined();
  });
});

describe('the catalog', () => {
  it('lists OpenAI-compatible STT models and marks the LLMs that accept images (the built-in one always)', () => {
    // Act
    const catalog = createModelCatalog(
      parseConfig({ OPENAI_COMPATIBLE_BASE_URL: 'http://127.0.0.1:9/v1', OPENAI_COMPATIBLE_MODELS: 'gpt-4o,text-only', OPENAI_COMPATIBLE_STT_MODELS: 'whisper-1', IMAGE_INPUT_MODELS: 'openai-compatible/gpt-4o' }),
    );

    // Assess
    const view = catalog.models.filter((model) => model.provider !== 'builtin' || model.type === 'LLM').map((model) => [model.type, `${model.provider}/${model.name}`, model.acceptsImages]);
    expect(view).toEqual([
      ['LLM', 'builtin/builtin-assistant', true],
      ['LLM', 'openai-compatible/gpt-4o', true],
      ['LLM', 'openai-compatible/text-only', false],
      ['STT', 'openai-compatible/whisper-1', false],
    ]);
  });

  it('refuses IMAGE_INPUT_MODELS naming a model that is not an LLM of the catalog, and STT models without a base URL', () => {
    expect(() => createModelCatalog(parseConfig({ IMAGE_INPUT_MODELS: 'bedrock/unknown' }))).toThrow(/IMAGE_INPUT_MODELS names bedrock\/unknown/);
    expect(() => checkSettingsTogether(parseConfig({ OPENAI_COMPATIBLE_STT_MODELS: 'whisper-1' }))).toThrow(/OPENAI_COMPATIBLE_STT_MODELS needs OPENAI_COMPATIBLE_BASE_URL/);
  });
});

describe('images in a turn of an OpenAI-compatible model', () => {
  it('reach the provider as image_url data parts beside the text', async () => {
    // Prepare
    const { stub, model } = await stubModel();
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]);

    // Act
    await consume(streamText({ model, messages: [{ role: 'user', content: [{ type: 'file', data: png, mediaType: 'image/png' }, { type: 'text', text: '[image: my receipt]' }] }] }));

    // Assess
    expect(stub.requests[0]!.body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'image_url', image_url: { url: `data:image/png;base64,${Buffer.from(png).toString('base64')}` } },
          { type: 'text', text: '[image: my receipt]' },
        ],
      },
    ]);
  });
});
