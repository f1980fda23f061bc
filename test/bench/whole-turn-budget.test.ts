/**
 * The bench's regression check of a turn (bench/whole-turn.ts, issue 26): `npm run bench` fails when a turn's
 * DynamoDB requests or write units grow beyond bench/budget.json, and docs/performance.md, which reviews check,
 * states the same budget.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { budget, wholeTurnChecks, type TurnShare, type WholeTurnResult } from '../../bench/whole-turn.ts';

const share = (requests: number, writeUnits: number): TurnShare => ({
  requests,
  operations: {},
  functions: {},
  readUnits: 0,
  writeUnits,
  eventBridgeEvents: 0,
  sqsMessagesSent: 0,
  sqsRequests: 0,
});

/** A run whose every figure is exactly at its budget, with the turn's counts given. */
function run(sync: TurnShare, background: TurnShare): WholeTurnResult {
  const percentiles = { p50: 1, p99: 1, max: 1 };
  const nothing = { runtime: 0, database: 0 };
  return {
    turnsPerSession: 5,
    counted: { turns: 20, sync, async: background, idleTimeouts: 0 },
    measured: {
      turns: 100,
      cpuMsPerTurn: { runtime: budget.cpuMsPerTurn / 2, database: 0 },
      idleCpuMsPerTurn: 0,
      requestsPerTurn: sync.requests + background.requests,
      firstTextMs: percentiles,
      toolTurns: 50,
      toolFirstTextMs: percentiles,
      nonStreamed: { concurrency: 16, durationMs: 10_000, turns: 710, turnsPerSecond: budget.nonStreamedTurnsPerSecond, errors: 0, over2s: 0, p50Ms: 1, p99Ms: 1, allTurns: 800 },
      idleTimeouts: 0,
      warnings: 0,
    },
    runtimeStartMs: budget.startOverDatabaseMs,
    rssMiB: { idle: { runtime: budget.idleRssMiB, database: 0 }, afterRun: { runtime: budget.afterRunRssMiB, database: 0 } },
    idleCpuShare: { afterStart: nothing, afterRun: nothing },
    floor: {
      sdk: { concurrency: 16, requestsPerSecond: 1, cpuMsPerRequest: 1, p50Ms: 1, readsAloneP50Ms: 1 },
      sdkUnits: { requests: 3, readUnits: 4, writeUnits: 6 },
      database: { startMs: 1_000, idleRssMiB: 1, idleCpuShare: 0 },
    },
    loadAverage: { start: 0, end: 0, cores: 2 },
  };
}

const failed = (result: WholeTurnResult) => wholeTurnChecks(result).filter((check) => !check.pass).map((check) => check.figure);
const { turn } = budget;

describe('the whole turn\'s regression check', () => {
  it('passes a turn within its budget', () => {
    expect(failed(run(share(turn.syncRequests, turn.syncWriteUnits), share(turn.asyncRequests, turn.asyncWriteUnits)))).toEqual([]);
  });

  it('fails a turn that makes one more DynamoDB request or writes one more unit, synchronously or after its response', () => {
    expect(failed(run(share(turn.syncRequests + 1, turn.syncWriteUnits), share(turn.asyncRequests, turn.asyncWriteUnits)))).toEqual(['whole turn: DynamoDB requests, synchronous']);
    expect(failed(run(share(turn.syncRequests, turn.syncWriteUnits + 1), share(turn.asyncRequests, turn.asyncWriteUnits)))).toEqual(['whole turn: DynamoDB write units, synchronous']);
    expect(failed(run(share(turn.syncRequests, turn.syncWriteUnits), share(turn.asyncRequests + 1, turn.asyncWriteUnits)))).toEqual(['whole turn: DynamoDB requests, asynchronous']);
    expect(failed(run(share(turn.syncRequests, turn.syncWriteUnits), share(turn.asyncRequests, turn.asyncWriteUnits + 1)))).toEqual(['whole turn: DynamoDB write units, asynchronous']);
  });
});

describe('docs/performance.md', () => {
  it('states the budget bench/budget.json holds', () => {
    const page = readFileSync(resolve(import.meta.dirname, '../../docs/performance.md'), 'utf8');
    for (const target of [
      `≤ ${turn.syncRequests} requests`,
      `≤ ${turn.syncWriteUnits} write units`,
      `≤ ${turn.asyncRequests} requests`,
      `≤ ${turn.asyncWriteUnits} write units`,
      `< ${budget.cpuMsPerTurn} ms`,
      `≥ ${budget.nonStreamedTurnsPerSecond}/s`,
      `≤ ${budget.idleRssMiB} MiB`,
      `≤ ${budget.afterRunRssMiB} MiB`,
      `< ${budget.idleCpuShareOfACore * 100} %`,
      `+ ${budget.startOverDatabaseMs / 1000} s`,
    ]) {
      expect(page).toContain(target);
    }
  });
});
