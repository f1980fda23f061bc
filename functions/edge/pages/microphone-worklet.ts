/**
 * The playground's microphone, in the audio thread: the input (the page's AudioContext runs at 16 kHz, so Chromium
 * resamples the device for us) cut into 20 ms frames of PCM 16-bit, each posted to the page, which sends it to the
 * voice session's socket (docs/voice.md#voice-sessions-from-the-browser).
 */

// The AudioWorkletGlobalScope's names: TypeScript's `dom` library does not declare them.
declare abstract class AudioWorkletProcessor {
  readonly port: MessagePort;
  abstract process(inputs: Float32Array[][]): boolean;
}
declare function registerProcessor(name: string, processor: new () => AudioWorkletProcessor): void;

/** 20 ms at 16 kHz. */
const frameSamples = 320;

class MicrophoneFrames extends AudioWorkletProcessor {
  private frame = new Int16Array(frameSamples);
  private filled = 0;

  process(inputs: Float32Array[][]): boolean {
    const channel = inputs[0]?.[0];
    if (!channel) return true;
    for (const sample of channel) {
      this.frame[this.filled++] = Math.max(-32_768, Math.min(32_767, Math.round(sample * 32_768)));
      if (this.filled === frameSamples) {
        this.port.postMessage(this.frame, [this.frame.buffer]);
        this.frame = new Int16Array(frameSamples);
        this.filled = 0;
      }
    }
    return true;
  }
}

registerProcessor('microphone-frames', MicrophoneFrames);
