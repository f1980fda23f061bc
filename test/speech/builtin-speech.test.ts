/**
 * The built-in engines with real audio: eSpeak NG says what a caller says, as telephone audio, and PocketSphinx
 * hears it through the STT port (docs/voice.md#built-in-speech).
 */
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { BuiltinSpeechToText } from '../../shared/speech/builtin-stt.ts';
import { BuiltinTextToSpeech } from '../../shared/speech/builtin-tts.ts';
import { SpeechEnginesMissingError, locateSpeechEngines } from '../../shared/speech/engines.ts';
import { SpeechProviderError, type TranscriptEvent, type TranscriptionStream } from '../../shared/speech/ports.ts';
import { muLawDecode } from '../../shared/speech/telephone-audio.ts';
import { wordErrorRate, words } from '../../shared/speech/word-error-rate.ts';
import { callerSentences } from '../support/caller-sentences.ts';
import { eventually } from '../support/eventually.ts';

const tts = new BuiltinTextToSpeech();
const stt = new BuiltinSpeechToText();

async function say(text: string): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of tts.synthesize(text, { voiceId: 'en-us', language: 'en-US' })) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** μ-law silence: 0xff is zero. */
const silence = (ms: number): Uint8Array => new Uint8Array(ms * 8).fill(0xff);

/** Writes the audio in Twilio's 20 ms frames, then does `last` (end, finalize), and collects the events. */
async function transcribe(stream: TranscriptionStream, audio: Uint8Array[], last: (stream: TranscriptionStream) => void = (s) => s.end()): Promise<TranscriptEvent[]> {
  const all = Buffer.concat(audio);
  for (let offset = 0; offset < all.length; offset += 160) stream.write(all.subarray(offset, offset + 160));
  last(stream);
  const events: TranscriptEvent[] = [];
  for await (const event of stream.events) events.push(event);
  return events;
}

const finals = (events: TranscriptEvent[]) => events.filter((event) => event.type === 'final');

/** Child processes of this test's process still running, by command name. */
const children = (): string[] =>
  execFileSync('ps', ['--ppid', String(process.pid), '-o', 'comm='], { encoding: 'utf8' })
    .split('\n')
    .filter((name) => name && name !== 'ps');

describe('built-in speech', () => {
  it('is installed: npm install put the engines where the adapters look', () => {
    const engines = locateSpeechEngines();
    expect(engines.espeak.bin).toMatch(/espeak-ng$/);
    expect(engines.pocketsphinx.bin).toMatch(/pocketsphinx_continuous$/);
  });

  it('says a sentence as telephone audio: μ-law at 8 kHz, as long as the speech, not silent', async () => {
    const audio = await say('Your order will arrive on Tuesday.');
    const seconds = audio.length / 8_000;
    expect(seconds).toBeGreaterThan(1);
    expect(seconds).toBeLessThan(4);
    const samples = muLawDecode(audio);
    expect(Math.max(...samples.map(Math.abs))).toBeGreaterThan(8_000);
  });

  it("hears what a caller says, each sentence a final that ends the turn, with a word error rate of at most 0.75 (0.66 measured)", async () => {
    const audio = [silence(300)];
    for (const sentence of callerSentences) audio.push(await say(sentence), silence(1_000));
    const events = await transcribe(stt.open({ language: 'en-US', endpointingMs: 600 }), audio);
    const heard = finals(events);
    expect(heard.map((event) => event.endOfTurn)).toEqual(callerSentences.map(() => true));
    expect(events.filter((event) => event.type === 'speech-started')).toHaveLength(callerSentences.length);
    const errors = callerSentences.reduce((sum, sentence, i) => sum + wordErrorRate(sentence, heard[i]?.text ?? '') * words(sentence).length, 0);
    const rate = errors / callerSentences.reduce((sum, sentence) => sum + words(sentence).length, 0);
    expect(rate, JSON.stringify(heard.map((event) => event.text))).toBeLessThanOrEqual(0.75);
  });

  it('gives two finals, each ending the turn and placed in the audio, for two utterances separated by more than the endpointing silence', async () => {
    const first = await say('Where is my order');
    const second = await say('Yes that is correct');
    const events = await transcribe(stt.open({ language: 'en-US', endpointingMs: 500 }), [silence(400), first, silence(900), second, silence(900)]);
    const heard = finals(events);
    expect(heard).toHaveLength(2);
    expect(heard.every((event) => event.endOfTurn && event.text.length > 0)).toBe(true);
    expect(heard[0]?.startMs).toBeGreaterThanOrEqual(380);
    expect(heard[0]?.startMs).toBeLessThan(400 + first.length / 8);
    expect(heard[1]?.startMs).toBeGreaterThan(400 + first.length / 8 + 900 - 20);
    expect(events.filter((event) => event.type === 'speech-started').map((event) => event.atMs)).toEqual([heard[0]?.startMs, heard[1]?.startMs]);
  });

  it('does not end the turn at a pause shorter than the endpointing silence', async () => {
    const events = await transcribe(stt.open({ language: 'en-US', endpointingMs: 1_000 }), [silence(300), await say('Where is my order'), silence(500), await say('It was due on Tuesday'), silence(1_200)]);
    expect(finals(events)).toHaveLength(1);
    expect(words(finals(events)[0]?.text ?? '').length).toBeGreaterThanOrEqual(4);
  });

  it('finalize() ends the turn now, with the words heard so far, without waiting for the silence', async () => {
    const stream = stt.open({ language: 'en-US', endpointingMs: 2_000 });
    const audio = await say('What time do you open tomorrow');
    const events = await transcribe(stream, [silence(300), audio, silence(200)], (s) => {
      s.finalize();
      s.end();
    });
    const heard = finals(events);
    expect(heard).toHaveLength(1);
    expect(heard[0]?.endOfTurn).toBe(true);
    expect(heard[0]?.text).not.toBe('');
    expect(heard[0]?.endMs).toBe(Math.round(300 + audio.length / 8 + 200));
  });

  it('close() ends the events at once, reporting nothing more, and leaves no decoder running', async () => {
    const stream = stt.open({ language: 'en-US' });
    const events = await transcribe(stream, [silence(300), await say('Where is my order')], (s) => s.close());
    expect(finals(events)).toEqual([]);
    expect(await eventually(children, (running) => !running.some((name) => /pocketsphinx|cat|sh/.test(name)))).toEqual([]);
  });

  it('stops synthesis when aborted: the audio stops, the iterator ends and eSpeak NG is gone', async () => {
    const controller = new AbortController();
    let chunks = 0;
    const long = 'This is a long answer that the caller interrupts. '.repeat(40);
    for await (const _ of tts.synthesize(long, { voiceId: 'en-us', language: 'en-US', signal: controller.signal })) {
      chunks++;
      controller.abort();
    }
    expect(chunks).toBe(1);
    expect(await eventually(children, (running) => !running.includes('espeak-ng'))).not.toContain('espeak-ng');
  });

  it('refuses a voice that is not one of its own, and says clearly when the engines are not installed', async () => {
    await expect(tts.synthesize('hello', { voiceId: 'Joanna-Neural', language: 'en-US' })[Symbol.asyncIterator]().next()).rejects.toThrow(SpeechProviderError);
    expect(() => locateSpeechEngines('/nonexistent')).toThrow(SpeechEnginesMissingError);
    const missing = new BuiltinTextToSpeech('/nonexistent').synthesize('hello', { voiceId: 'en-us', language: 'en-US' })[Symbol.asyncIterator]().next();
    await expect(missing).rejects.toThrow(/Built-in speech is not installed.*npm install/);
    const events = await transcribe(new BuiltinSpeechToText('/nonexistent').open({ language: 'en-US' }), []);
    expect(events).toEqual([{ type: 'error', message: expect.stringMatching(/builtin: Built-in speech is not installed/) }]);
  });
});
