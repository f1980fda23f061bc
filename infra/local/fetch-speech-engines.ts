/**
 * `npm install` hook: install the built-in speech engines now so that `npm start` and `npm test` need no network
 * later. `--required` (.ci/run) makes a failure fatal.
 */
import { ensureSpeechEngines } from './speech-engines.ts';

try {
  console.log(`Built-in speech ready: ${ensureSpeechEngines(process.env.SPEECH_ENGINES_DIR).root}`);
} catch (error) {
  // Not fatal: everything but built-in speech works, and a call that needs it says what is missing.
  console.warn(`Built-in speech (eSpeak NG, PocketSphinx) not installed: ${(error as Error).message.split('\n')[0]}`);
  if (process.argv.includes('--required')) process.exitCode = 1;
}
