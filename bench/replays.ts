import { loadavg } from 'node:os';
import { startLocalDatabase } from '../infra/local/environment.ts';
import { childResult } from './child-result.ts';
import type { Check } from './report.ts';

/** Replayed turns a second, and what the same turns cost without the replay's storage (docs/performance.md#replays). */
export interface ReplaysResult {
  loadAverageAtStart: number[];
  loadAverageAtEnd: number[];
  sessions: number;
  turnsPerSession: number;
  /** Measured rounds, each a replay of every session then the floor over the same turns; one more round warms up. */
  rounds: number;
  /** The conversations as they were first had: turns through the chat API, one at a time, each stored. */
  live: Throughput;
  /** `runReplay` as the replay function runs it, on DynamoDB Local. */
  replay: Throughput;
  /** The replay's own turn loop over the same sessions and candidate held in memory: no storage at all. */
  floor: Throughput;
  /** Turns whose replay (or floor) differs from the original, over every round: the candidate differs only in its prompt, with no rule the built-in model follows, so 0. */
  turnsChanged: number;
}

export interface Throughput {
  turns: number;
  seconds: number;
  turnsPerSecond: number;
  /** The bench process's CPU (user + system) a turn; DynamoDB Local's own is apart. */
  cpuMsPerTurn: number;
}

export async function measureReplays(log: (line: string) => void): Promise<ReplaysResult> {
  const loadAverageAtStart = loadavg();
  log('replays: starting DynamoDB Local (in memory)');
  const database = await startLocalDatabase({ tableName: 'bench-replays' });
  try {
    log('replays: 10 sessions of 10 turns (3 with a tool call) through the chat API, then replays of them and the floor, turn about');
    const figures = await childResult<Omit<ReplaysResult, 'loadAverageAtStart' | 'loadAverageAtEnd'>>('replays-runtime.ts', database.endpoint, database.tableName, {
      LOOPBACK_EGRESS_PORTS: '1024-65535',
    });
    return { loadAverageAtStart, loadAverageAtEnd: loadavg(), ...figures };
  } finally {
    await database.stop();
  }
}

export function replaysChecks(result: ReplaysResult): Check[] {
  return [{ figure: 'replays: turns changed replaying the configuration that answered them', value: result.turnsChanged, unit: 'turns', target: 0, comparison: '<=', pass: result.turnsChanged === 0 }];
}

const rate = ({ turns, seconds, turnsPerSecond, cpuMsPerTurn }: Throughput) =>
  `${turnsPerSecond.toFixed(1)} turns/s (${turns} turns in ${seconds.toFixed(1)} s, ${cpuMsPerTurn.toFixed(1)} ms of CPU a turn)`;
const loads = (values: number[]) => values.map((value) => value.toFixed(2)).join(' ');

export function replaysReport(result: ReplaysResult): string[] {
  return [
    `replays (load average ${loads(result.loadAverageAtStart)} at the start, ${loads(result.loadAverageAtEnd)} at the end): ${result.sessions} sessions of ${result.turnsPerSession} turns, ${result.rounds} rounds`,
    `  replayed (runReplay on DynamoDB Local): ${rate(result.replay)}`,
    `  floor (the same turns, no storage):     ${rate(result.floor)}`,
    `  live (the chat API, one at a time):     ${rate(result.live)}`,
    `  turns changed: ${result.turnsChanged}`,
  ];
}
