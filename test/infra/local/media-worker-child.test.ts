/**
 * The local runtime's media worker is a child process (infra/local/media-worker.ts): when the process that started it
 * ends without stopping it (a test process cut short, `npm start` killed), the worker goes too, rather than living
 * on with its port, its database connections and its speech engines.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { eventually } from '../../support/eventually.ts';

const starter = resolve(import.meta.dirname, '../../../infra/local/media-worker.ts');

describe('the local media worker', () => {
  it('ends with the process that started it, even one that never stopped it', async () => {
    const script = join(mkdtempSync(join(tmpdir(), 'media-worker-parent-')), 'parent.ts');
    writeFileSync(script, `import { startLocalMediaWorker } from ${JSON.stringify(starter)};\nconst worker = await startLocalMediaWorker(process.env);\nconsole.log(worker.port);\nprocess.exit(0);\n`);
    const { stdout } = await promisify(execFile)(process.execPath, ['--disable-warning=ExperimentalWarning', script], { env: process.env });
    const port = Number(stdout.trim().split('\n').at(-1));
    expect(port).toBeGreaterThan(0);

    const answers = async () => fetch(`http://127.0.0.1:${port}/health`).then(() => true, () => false);
    expect(await eventually(answers, (answered) => !answered)).toBe(false);
  });
});
