/**
 * A speech-to-speech session's replies as the turn engine's model (shared/voice/speech-to-speech-turns.ts): what a
 * round streams, what goes back to the session, and how `hybrid` hands a tool turn to the text LLM.
 */
import type { LanguageModelV4CallOptions, LanguageModelV4StreamPart } from '@ai-sdk/provider';
import { describe, expect, it } from 'vitest';
import { createBuiltinModel } from '../../shared/models/builtin-model.ts';
import type { Model } from '../../shared/models/model-schemas.ts';
import { verbatimReplyPrefix } from '../../shared/models/prompt-conventions.ts';
import type { SpeechToSpeechSession } from '../../shared/speech/ports.ts';
import { SpeechToSpeechTurns } from '../../shared/voice/speech-to-speech-turns.ts';

const stsModel: Model = { id: 'sts-model', type: 'STS', provider: 'openai-compatible', name: 'gpt-realtime', isDefault: false, acceptsImages: false, source: 'deployment' };
const llm: Model = { id: 'llm-model', type: 'LLM', provider: 'builtin', name: 'builtin', isDefault: true, acceptsImages: false, source: 'deployment' };

/** A session that records the tool outputs it is given. */
function session(): SpeechToSpeechSession & { results: [string, string][] } {
  const results: [string, string][] = [];
  return {
    results,
    write: () => undefined,
    toolResult: (callId, output) => void results.push([callId, output]),
    interrupt: () => undefined,
    say: () => undefined,
    close: () => undefined,
    events: { [Symbol.asyncIterator]: () => ({ next: async () => ({ done: true, value: undefined }) }) },
  };
}

async function read(stream: ReadableStream<LanguageModelV4StreamPart>): Promise<LanguageModelV4StreamPart[]> {
  const parts: LanguageModelV4StreamPart[] = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

const call = (prompt: LanguageModelV4CallOptions['prompt'], tools: LanguageModelV4CallOptions['tools'] = []): LanguageModelV4CallOptions => ({ prompt, tools });
const userPrompt: LanguageModelV4CallOptions['prompt'] = [
  { role: 'system', content: 'You answer the phone.' },
  { role: 'user', content: [{ type: 'text', text: 'the weather leave' }] },
];

describe('the turns of a speech-to-speech session', () => {
  it('pairs an utterance transcribed after its answer began with that answer, and leaves the next utterance for the next turn', async () => {
    const turns = new SpeechToSpeechTurns(session(), stsModel);
    turns.push({ type: 'assistant-transcript', text: 'Hello', final: false });
    turns.push({ type: 'user-transcript', text: 'hi there' });
    turns.push({ type: 'user-transcript', text: 'and then' });
    turns.push({ type: 'assistant-transcript', text: ' again.', final: false });
    turns.push({ type: 'assistant-transcript', text: 'Hello again.', final: true });
    turns.push({ type: 'response-done' });

    expect(await turns.nextUtterance()).toBe('hi there');
    const { stream } = await turns.turnModel().languageModel.doStream(call(userPrompt));
    const parts = await read(stream);
    expect(parts.filter((part) => part.type === 'text-delta').map((part) => part.delta).join('')).toBe('Hello again.');
    expect(parts.at(-1)).toMatchObject({ type: 'finish' });
    expect(await turns.nextUtterance()).toBe('and then');
  });

  it('gives a function call to the engine, and the engine’s output back to the session before the next response', async () => {
    const sts = session();
    const turns = new SpeechToSpeechTurns(sts, stsModel);
    const turn = turns.turnModel();
    turns.push({ type: 'tool-call', callId: 'call_1', name: 'get_weather', arguments: '{}' });
    turns.push({ type: 'response-done' });
    const first = await read((await turn.languageModel.doStream(call(userPrompt))).stream);
    expect(first.filter((part) => part.type === 'tool-call')).toEqual([{ type: 'tool-call', toolCallId: 'call_1', toolName: 'get_weather', input: '{}' }]);

    turns.push({ type: 'assistant-transcript', text: 'It is sunny.', final: true });
    turns.push({ type: 'response-done' });
    const withResult: LanguageModelV4CallOptions['prompt'] = [
      ...userPrompt,
      { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'call_1', toolName: 'get_weather', input: {} }] },
      { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'call_1', toolName: 'get_weather', output: { type: 'text', value: 'Sunny' } }] },
    ];
    const second = await read((await turn.languageModel.doStream(call(withResult))).stream);
    expect(sts.results).toEqual([['call_1', 'Sunny']]);
    expect(second.filter((part) => part.type === 'text-delta').map((part) => part.delta)).toEqual(['It is sunny.']);
    expect(turn.record()).toEqual({ mode: 'sts', answeredBy: 'sts', reason: 'the speech-to-speech model answered by itself', stsModelId: 'sts-model' });
  });

  it('in hybrid, hands a turn that asks for a tool to the text LLM, whose answer the session is asked to say word for word', async () => {
    const sts = session();
    const turns = new SpeechToSpeechTurns(sts, stsModel);
    const turn = turns.turnModel({ model: llm, languageModel: createBuiltinModel() });
    turns.push({ type: 'tool-call', callId: 'call_sts', name: 'get_weather', arguments: '{}' });
    turns.push({ type: 'response-done' });
    // The text LLM (the built-in one) calls the tool itself, with the engine: the session's call is kept back.
    const weatherTool = { type: 'function' as const, name: 'get_weather', description: 'Current weather', inputSchema: { type: 'object' as const, properties: {} } };
    const first = await read((await turn.languageModel.doStream(call([...userPrompt], [weatherTool]))).stream);
    const llmCall = first.find((part) => part.type === 'tool-call');
    expect(llmCall).toMatchObject({ toolName: 'get_weather' });
    expect(llmCall).not.toMatchObject({ toolCallId: 'call_sts' });
    expect(sts.results).toEqual([]);

    // Its answer after the result goes to the session as the kept call's output; what the session says is the reply.
    turns.push({ type: 'assistant-transcript', text: 'The get_weather tool returned: Sunny', final: true });
    turns.push({ type: 'response-done' });
    const { toolCallId } = llmCall as { toolCallId: string };
    const withResult: LanguageModelV4CallOptions['prompt'] = [
      ...userPrompt,
      { role: 'assistant', content: [{ type: 'tool-call', toolCallId, toolName: 'get_weather', input: {} }] },
      { role: 'tool', content: [{ type: 'tool-result', toolCallId, toolName: 'get_weather', output: { type: 'text', value: 'Sunny' } }] },
    ];
    const second = await read((await turn.languageModel.doStream(call(withResult, [weatherTool]))).stream);
    expect(sts.results).toEqual([['call_sts', `${verbatimReplyPrefix}The get_weather tool returned: Sunny`]]);
    expect(second.filter((part) => part.type === 'text-delta').map((part) => part.delta).join('')).toBe('The get_weather tool returned: Sunny');
    expect(turn.record()).toMatchObject({ mode: 'hybrid', answeredBy: 'llm', stsModelId: 'sts-model', llmModelId: 'llm-model' });
  });

  it('fails the round when the engine’s time is up and the session never ends its response', async () => {
    const turns = new SpeechToSpeechTurns(session(), stsModel);
    turns.push({ type: 'assistant-transcript', text: 'I am still', final: false });
    const timeUp = new AbortController();
    const { stream } = await turns.turnModel().languageModel.doStream({ ...call(userPrompt), abortSignal: timeUp.signal });
    const read = stream.getReader();
    expect(await read.read()).toEqual({ done: false, value: { type: 'text-delta', id: 'sts', delta: 'I am still' } });
    timeUp.abort(new Error('turn timed out'));
    await expect(read.read()).rejects.toThrow('turn timed out');
  });
});
