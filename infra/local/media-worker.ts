import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { freePort } from './free-port.ts';

const entry = resolve(import.meta.dirname, '../../services/media-worker/main.ts');

/** How long the worker may take to finish its calls once told to stop, before it is killed. */
const stopGraceMs = 5_000;

export interface LocalMediaWorker {
  /** Twilio's stream URL of the worker (`MEDIA_WORKER_URL`). */
  url: string;
  port: number;
  stop(): Promise<void>;
}

/**
 * The media worker in a process of its own, as on AWS (its own task): the same entry, with this runtime's
 * environment (`env`, with the database, the simulators and the settings set), on `port` or a free one.
 */
export async function startLocalMediaWorker(env: NodeJS.ProcessEnv, options: { port?: number | undefined } = {}): Promise<LocalMediaWorker> {
  const port = options.port ?? (await freePort());
  // The IPC channel ties the worker to this process: it stops itself when the channel drops (this process gone
  // without stopping it, as a test process ended early), and holds neither process open.
  const child = spawn(process.execPath, [entry], { env: { ...env, PORT: String(port), HOST: '127.0.0.1' }, stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
  child.channel?.unref();
  const lines = createInterface({ input: child.stdout as Readable });
  // Ready once it says it listens; its later lines are the runtime's log.
  await new Promise<void>((resolveReady, reject) => {
    const exited = (code: number | null) => reject(new Error(`the media worker exited (${code}) before it listened`));
    child.once('exit', exited);
    lines.on('line', (line) => {
      if (/^Media worker listening/.test(line)) {
        child.off('exit', exited);
        resolveReady();
      } else console.log(line);
    });
  });
  return {
    url: `ws://127.0.0.1:${port}/media-stream`,
    port,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      const kill = setTimeout(() => child.kill('SIGKILL'), stopGraceMs);
      await exited;
      clearTimeout(kill);
    },
  };
}
