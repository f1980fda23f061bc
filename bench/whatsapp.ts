import { childResult } from './child-result.ts';
import type { Check } from './report.ts';
import type { WhatsappBenchResult } from './whatsapp-runtime.ts';

export type { WhatsappBenchResult };

/** Issue 13's targets: Meta expects a fast 200, and a customer a prompt reply (built-in model, locally). */
export const whatsappTargets = { ackP99Ms: 50, replyP50Ms: 100 } as const;

/** WhatsApp on the local runtime, in a child process of its own (bench/whatsapp-runtime.ts). */
export function measureWhatsapp(dynamodbEndpoint: string, tableName: string): Promise<WhatsappBenchResult> {
  return childResult<WhatsappBenchResult>('whatsapp-runtime.ts', dynamodbEndpoint, tableName);
}

const round1 = (value: number) => Math.round(value * 10) / 10;

export function whatsappChecks(result: WhatsappBenchResult): Check[] {
  return [
    { figure: 'WhatsApp webhook → reply sent p50 (built-in model)', value: round1(result.replyMs.p50), unit: 'ms', target: whatsappTargets.replyP50Ms, comparison: '<=', pass: result.replyMs.p50 <= whatsappTargets.replyP50Ms },
    { figure: 'WhatsApp webhook acknowledgement p99', value: round1(result.ackMs.p99), unit: 'ms', target: whatsappTargets.ackP99Ms, comparison: '<=', pass: result.ackMs.p99 <= whatsappTargets.ackP99Ms },
  ];
}

export function whatsappReport(result: WhatsappBenchResult): string[] {
  const ms = (figures: { p50: number; p99: number }) => `p50 ${figures.p50.toFixed(1)} ms, p99 ${figures.p99.toFixed(1)} ms`;
  return [
    '',
    `14. WhatsApp on the local runtime (API, SQS emulator with the inbound function, WhatsApp simulator in one child process; built-in model) — targets: reply p50 ≤ ${whatsappTargets.replyP50Ms} ms, ack p99 ≤ ${whatsappTargets.ackP99Ms} ms`,
    `   webhook acknowledgement (signed notification posted → 200), ${result.ackMs.requests} messages one at a time: ${ms(result.ackMs)}; floor (GET /health, the bare route of the same server): ${ms(result.ackFloorMs)}`,
    `   webhook → reply accepted by the Graph API, ${result.replyMs.turns} turns (conversations of 20): ${ms(result.replyMs)}; floor (the same turn through the chat API, stream: false): ${ms(result.replyFloorMs)}`,
  ];
}

if (process.argv[1] === import.meta.filename) {
  const { startLocalDatabase } = await import('../infra/local/environment.ts');
  const database = await startLocalDatabase({ tableName: 'bench-whatsapp' });
  try {
    const result = await measureWhatsapp(database.endpoint, database.tableName);
    console.log(whatsappReport(result).join('\n'));
  } finally {
    await database.stop();
  }
}
