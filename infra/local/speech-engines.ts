/**
 * Installs the built-in speech engines without root (decision 440): when the system lacks them, `apt-get download`
 * fetches Debian's packages into .cache/speech/debs and `dpkg-deb -x` unpacks them into the project-local root that
 * shared/speech/engines.ts looks in. Nothing is fetched at run time.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { locateSpeechEngines, projectEnginesRoot, speechEnginePackages, type SpeechEngines } from '../../shared/speech/engines.ts';

/**
 * The packages and the libraries they load that a desktop or CI image may lack (Debian bookworm's names): the
 * engines and their own libraries, and PocketSphinx's BLAS and LAPACK. The audio-output libraries eSpeak NG links
 * (libpulse0, libasound2) are on nearly every machine and pull in half a desktop; when one is missing, the check
 * below says which.
 */
const packages = [...speechEnginePackages, 'libespeak-ng1', 'espeak-ng-data', 'libpcaudio0', 'libsonic0', 'libpocketsphinx3', 'libsphinxbase3', 'libblas3', 'liblapack3', 'libgfortran5'];
const debDir = join(dirname(projectEnginesRoot), 'debs');

function run(command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): string {
  const result = spawnSync(command, args, { encoding: 'utf8', ...options });
  if (result.error) throw new Error(`${command} is not available (${result.error.message})`);
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed: ${(result.stderr || result.stdout).trim().split('\n').slice(-3).join(' ')}`);
  return result.stdout;
}

/** Runs both engines once, so that a missing shared library shows now rather than during a call. */
function check(engines: SpeechEngines): void {
  run(engines.espeak.bin, ['--path', engines.espeak.dataPath, '-q', 'ok'], { env: engines.env });
  const decoder = spawnSync(engines.pocketsphinx.bin, [], { encoding: 'utf8', env: engines.env });
  if (/error while loading shared libraries/.test(decoder.stderr)) throw new Error(decoder.stderr.trim());
}

/** The engines, installed into the project-local root first when neither the setting nor the system has them. */
export function ensureSpeechEngines(configuredRoot?: string): SpeechEngines {
  try {
    return locateSpeechEngines(configuredRoot);
  } catch (error) {
    if (configuredRoot) throw error;
  }
  // Emptied first: a package of another version left from an earlier run would be unpacked over this one.
  rmSync(debDir, { recursive: true, force: true });
  mkdirSync(debDir, { recursive: true });
  try {
    run('apt-get', ['download', ...packages], { cwd: debDir });
  } catch (error) {
    const message = (error as Error).message;
    const hint = /not available/.test(message) ? 'install them with the system\'s package manager' : 'run apt-get update first, or apt-get install them';
    throw new Error(`${message}; ${hint} (${speechEnginePackages.join(' ')}) and run npm install again`);
  }
  // Unpacked beside, then renamed: a start running at the same time never sees half a root.
  const work = mkdtempSync(`${projectEnginesRoot}-unpacking-`);
  try {
    for (const deb of readdirSync(debDir).filter((name) => name.endsWith('.deb'))) run('dpkg-deb', ['-x', join(debDir, deb), work]);
    rmSync(projectEnginesRoot, { recursive: true, force: true });
    renameSync(work, projectEnginesRoot);
  } finally {
    if (existsSync(work)) rmSync(work, { recursive: true, force: true });
  }
  const engines = locateSpeechEngines(projectEnginesRoot);
  check(engines);
  return engines;
}
