/**
 * Where the built-in speech engines are (docs/voice.md#built-in-speech): eSpeak NG and PocketSphinx with its US
 * English model, as Debian's packages lay them out under a root — `/` when the system has them (the container's
 * `apt-get install`), or the project-local root `npm install` unpacks them into (infra/local/speech-engines.ts).
 */
import { existsSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** The Debian packages the engines come from; `npm install` and the container's Dockerfile install these. */
export const speechEnginePackages = ['espeak-ng', 'pocketsphinx', 'pocketsphinx-en-us'] as const;

/** Where `npm install` unpacks the packages when the system lacks them (git-ignored). */
export const projectEnginesRoot = resolve(import.meta.dirname, '../../.cache/speech/root');

export interface SpeechEngines {
  /** The root the packages are unpacked under (`/` for the system's). */
  root: string;
  espeak: { bin: string; dataPath: string };
  pocketsphinx: { bin: string; hmm: string; lm: string; dict: string };
  /** The environment a child process needs to load the engines' shared libraries from the root. */
  env: NodeJS.ProcessEnv;
}

export class SpeechEnginesMissingError extends Error {
  constructor(detail: string) {
    super(`Built-in speech is not installed (${detail}). Run npm install, or apt-get install ${speechEnginePackages.join(' ')}; docs/voice.md#built-in-speech.`);
    this.name = 'SpeechEnginesMissingError';
  }
}

/** The engines under `root`, or why they are not usable there. */
function enginesUnder(root: string): SpeechEngines | string {
  const libRoot = join(root, 'usr/lib');
  // The multiarch directory (x86_64-linux-gnu, aarch64-linux-gnu) that holds eSpeak NG's data.
  const arch = existsSync(libRoot) ? readdirSync(libRoot).find((name) => existsSync(join(libRoot, name, 'espeak-ng-data'))) : undefined;
  const model = join(root, 'usr/share/pocketsphinx/model/en-us');
  const engines: SpeechEngines = {
    root,
    espeak: { bin: join(root, 'usr/bin/espeak-ng'), dataPath: arch ? join(libRoot, arch) : '' },
    pocketsphinx: { bin: join(root, 'usr/bin/pocketsphinx_continuous'), hmm: join(model, 'en-us'), lm: join(model, 'en-us.lm.bin'), dict: join(model, 'cmudict-en-us.dict') },
    env: arch && root !== '/' ? { ...process.env, LD_LIBRARY_PATH: [join(libRoot, arch), join(libRoot, arch, 'blas'), join(libRoot, arch, 'lapack'), process.env.LD_LIBRARY_PATH].filter(Boolean).join(':') } : process.env,
  };
  const missing = [engines.espeak.bin, engines.pocketsphinx.bin, engines.pocketsphinx.hmm, engines.pocketsphinx.lm, engines.pocketsphinx.dict].filter((path) => !existsSync(path));
  if (!arch) missing.unshift(join(libRoot, '*/espeak-ng-data'));
  return missing.length ? `missing under ${root}: ${missing.join(', ')}` : engines;
}

/**
 * The engines: under `SPEECH_ENGINES_DIR` when it is set, else the system's when it has them all, else the
 * project-local root. Throws `SpeechEnginesMissingError` saying what is missing.
 */
export function locateSpeechEngines(configuredRoot?: string): SpeechEngines {
  const candidates = configuredRoot ? [configuredRoot] : ['/', projectEnginesRoot];
  const reasons: string[] = [];
  for (const root of candidates) {
    const found = enginesUnder(root);
    if (typeof found !== 'string') return found;
    reasons.push(found);
  }
  throw new SpeechEnginesMissingError(reasons.join('; '));
}
