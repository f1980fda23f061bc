import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ScheduledFunction } from '../../functions/consumers.ts';
import { accountInvocation } from '../../shared/platform/cost-accounting.ts';
import { logger } from '../../shared/platform/logger.ts';
import { localAccountId } from './queues.ts';

const repoRoot = resolve(import.meta.dirname, '../..');

/**
 * EventBridge's scheduled rules for `npm start`: each scheduled function's handler is called at its rate (or every
 * `intervalMs`, to see it sooner), with the Scheduled Event EventBridge would send; one call at a time per function.
 */
export function startScheduleTicker(options: { functions: readonly ScheduledFunction[]; region: string; intervalMs?: number | undefined }): { stop(): void } {
  const timers = options.functions.map((scheduled) => {
    const handler = import(pathToFileURL(join(repoRoot, scheduled.entry)).href).then((module: { handler: (event: unknown) => Promise<unknown> }) => module.handler);
    let running = false;
    const tick = async () => {
      if (running) return;
      running = true;
      try {
        const time = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
        const run = await handler;
        await accountInvocation(scheduled.name, 'schedule', () =>
          run({
            version: '0',
            id: crypto.randomUUID(),
            'detail-type': 'Scheduled Event',
            source: 'aws.events',
            account: localAccountId,
            time,
            region: options.region,
            resources: [`arn:aws:events:${options.region}:${localAccountId}:rule/${scheduled.name}`],
            detail: {},
          }),
        );
      } catch (error) {
        logger.error('scheduled function failed', { name: scheduled.name, error: error as Error });
      } finally {
        running = false;
      }
    };
    return setInterval(() => void tick(), options.intervalMs ?? scheduled.rateMinutes * 60_000).unref();
  });
  return { stop: () => timers.forEach(clearInterval) };
}
