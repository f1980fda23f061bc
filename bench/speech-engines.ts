/**
 * `node bench/speech-engines.ts`: what the built-in engines cost (docs/voice.md#built-in-speech), each figure beside
 * its floor measured in the same run. TTS: time to the first chunk of telephone audio and the real-time factor,
 * against spawning `true`. STT: from the end of speech to the final, the endpointing silence apart from the decoding
 * after it, with the audio written in real time (20 ms frames, as Twilio sends them); against it, a cold process per
 * utterance (the model loaded after the caller stopped); CPU per second of audio, against reading the audio
 * (μ-law decoding and upsampling).
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BuiltinSpeechToText, defaultEndpointingMs } from '../shared/speech/builtin-stt.ts';
import { BuiltinTextToSpeech } from '../shared/speech/builtin-tts.ts';
import { locateSpeechEngines } from '../shared/speech/engines.ts';
import { muLawDecode, resample } from '../shared/speech/telephone-audio.ts';
import { wordErrorRate, words } from '../shared/speech/word-error-rate.ts';
import { callerSentences as sentences } from '../test/support/caller-sentences.ts';

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
/** CPU seconds of this process's children that have ended (`cutime` + `cstime` of /proc/self/stat). */
const childCpu = (): number => {
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[13]) + Number(fields[14])) / 100;
};

const tts = new BuiltinTextToSpeech();
const audioOf: Uint8Array[] = [];
const firstChunk: number[] = [];
const realTime: number[] = [];
for (const sentence of sentences) {
  const started = performance.now();
  const chunks: Uint8Array[] = [];
  for await (const chunk of tts.synthesize(sentence, { voiceId: 'en-us', language: 'en-US' })) {
    if (!chunks.length) firstChunk.push(performance.now() - started);
    chunks.push(chunk);
  }
  const audio = Buffer.concat(chunks);
  realTime.push((performance.now() - started) / (audio.length / 8));
  audioOf.push(audio);
}
const spawnTrue: number[] = [];
for (const _ of sentences) {
  const started = performance.now();
  await new Promise((resolve) => spawn('true').on('close', resolve));
  spawnTrue.push(performance.now() - started);
}

// STT, live: each sentence alone in a stream, written in real time, then the endpointing silence.
const stt = new BuiltinSpeechToText();
const decodeAfter: number[] = [];
let errors = 0;
const cpuBefore = childCpu();
let audioSeconds = 0;
for (const [i, audio] of audioOf.entries()) {
  const stream = stt.open({ language: 'en-US' });
  const frames = [...Buffer.concat([new Uint8Array(2_400).fill(0xff), audio, new Uint8Array(8 * (defaultEndpointingMs + 100)).fill(0xff)])];
  audioSeconds += frames.length / 8_000;
  const final = (async () => {
    for await (const event of stream.events) if (event.type === 'final') return { event, at: performance.now() };
    throw new Error('no final');
  })();
  const start = performance.now();
  for (let offset = 0; offset < frames.length; offset += 160) {
    stream.write(Uint8Array.from(frames.slice(offset, offset + 160)));
    await sleep(Math.max(0, start + (offset / 160 + 1) * 20 - performance.now()));
  }
  const { event, at } = await final;
  stream.end();
  // The final is due when the endpointing silence has been written after the end of speech.
  decodeAfter.push(at - (start + event.endMs + defaultEndpointingMs));
  errors += wordErrorRate(sentences[i] as string, event.text) * words(sentences[i] as string).length;
}
await sleep(200);
const sttCpu = (childCpu() - cpuBefore) / audioSeconds;

// Against it: a cold process per utterance, started when the utterance ended.
const engines = locateSpeechEngines();
const cold: number[] = [];
const raw = join(tmpdir(), 'speech-bench.raw');
for (const audio of audioOf) {
  const pcm = resample(muLawDecode(audio), 8_000, 16_000);
  writeFileSync(raw, pcm);
  const started = performance.now();
  spawnSync(engines.pocketsphinx.bin, ['-hmm', engines.pocketsphinx.hmm, '-lm', engines.pocketsphinx.lm, '-dict', engines.pocketsphinx.dict, '-infile', raw, '-logfn', '/dev/null'], { env: engines.env });
  cold.push(performance.now() - started);
}
const readStarted = process.cpuUsage();
for (const audio of audioOf) resample(muLawDecode(audio), 8_000, 16_000);
const readCpu = (process.cpuUsage(readStarted).user + process.cpuUsage(readStarted).system) / 1e6 / audioOf.reduce((sum, audio) => sum + audio.length / 8_000, 0);

const totalWords = sentences.reduce((sum, sentence) => sum + words(sentence).length, 0);
console.log(`load average ${loadavg().map((value) => value.toFixed(2)).join(' ')}`);
console.log(`TTS first chunk p50 ${median(firstChunk).toFixed(0)} ms (floor: spawning true ${median(spawnTrue).toFixed(1)} ms); real-time factor p50 ${median(realTime).toFixed(3)}`);
console.log(`STT end of speech → final p50 ${defaultEndpointingMs} ms endpointing + ${median(decodeAfter).toFixed(0)} ms decoding (max ${Math.max(...decodeAfter).toFixed(0)}); a cold process per utterance instead: ${median(cold).toFixed(0)} ms`);
console.log(`STT CPU ${(sttCpu * 1000).toFixed(0)} ms per second of audio (floor: reading it, μ-law and upsampling, ${(readCpu * 1000).toFixed(1)} ms); word error rate ${(errors / totalWords).toFixed(3)} over ${totalWords} words`);
