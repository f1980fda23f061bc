/**
 * Speech that takes no time, for `npm run bench -- voice-media`: what is left of a turn's latency is ours. The
 * caller's end of utterance is an all-zero frame (telephone silence is 0xff); the recogniser's final, or the
 * speech-to-speech session's transcript and reply, come the moment it arrives; audio is made at once, 60 ms a
 * character as eSpeak speaks, so that a reply sends as many frames as a spoken one.
 */
import { verbatimReplyPrefix } from '../shared/models/prompt-conventions.ts';
import { EventQueue } from '../shared/speech/event-queue.ts';
import type { SpeechToSpeech, SpeechToSpeechEvent, SpeechToText, TranscriptEvent } from '../shared/speech/ports.ts';
import type { CallSpeech } from '../shared/voice/ports.ts';

/** The words the scripted caller says at each end of utterance. */
const scriptedUtterance = 'What is the weather like today';
/** What the scripted speech-to-speech model answers by itself. */
const scriptedAnswer = 'It is sunny and warm all day today.';
/**
 * The tool the scripted speech-to-speech model asks for whenever it is offered (the bench's `hybrid` agent has it):
 * its turns take the text LLM's path.
 */
export const scriptedToolName = 'get_weather';
const scriptedBytesPerChar = 480;

const isEndOfUtterance = (audio: Uint8Array) => audio.length > 0 && audio.every((byte) => byte === 0);
const spokenAudio = (text: string) => Buffer.alloc(text.length * scriptedBytesPerChar, 0x55);

const scriptedSpeechToText: SpeechToText = {
  provider: 'scripted',
  open: () => {
    const transcripts = new EventQueue<TranscriptEvent>();
    return {
      write: (audio) => {
        if (isEndOfUtterance(audio)) transcripts.push({ type: 'final', text: scriptedUtterance, endOfTurn: true, startMs: 0, endMs: 0 });
      },
      finalize: () => undefined,
      end: () => transcripts.end(),
      close: () => transcripts.end(true),
      events: transcripts,
    };
  },
};

/**
 * A speech-to-speech model that hears the scripted utterance and answers at once: by itself, or, offered
 * `scriptedToolName`, by asking for it and saying what the tool's output (in `hybrid`, the text LLM's answer) says.
 */
const scriptedSpeechToSpeech: SpeechToSpeech = {
  provider: 'scripted',
  open: (options) => {
    const session = new EventQueue<SpeechToSpeechEvent>();
    const asksTool = options.tools.some((tool) => tool.name === scriptedToolName);
    const reply = (text: string) => {
      session.push({ type: 'audio', audio: spokenAudio(text) });
      session.push({ type: 'assistant-transcript', text, final: true });
      session.push({ type: 'response-done' });
    };
    return {
      write: (audio) => {
        if (!isEndOfUtterance(audio)) return;
        session.push({ type: 'user-transcript', text: scriptedUtterance });
        if (!asksTool) return reply(scriptedAnswer);
        session.push({ type: 'tool-call', callId: crypto.randomUUID(), name: scriptedToolName, arguments: '{}' });
        session.push({ type: 'response-done' });
      },
      toolResult: (_callId, output) => reply(output.startsWith(verbatimReplyPrefix) ? output.slice(verbatimReplyPrefix.length) : output),
      interrupt: () => undefined,
      say: reply,
      close: () => session.end(true),
      events: session,
    };
  },
};

/** The call's speech of `real` with every engine scripted; the speech-to-speech model is still the catalog's. */
export function scriptedCallSpeech(real: CallSpeech): CallSpeech {
  return {
    speechToText: async () => ({ stt: scriptedSpeechToText }),
    textToSpeech: async () => ({
      tts: {
        provider: 'scripted',
        synthesize: async function* (text) {
          yield spokenAudio(text);
        },
      },
      voiceId: 'scripted',
    }),
    voiceActivity: () => ({ push: () => undefined }),
    speechToSpeech: async (orgId, agent) => {
      const found = await real.speechToSpeech(orgId, agent);
      return found && { sts: scriptedSpeechToSpeech, model: found.model };
    },
  };
}
