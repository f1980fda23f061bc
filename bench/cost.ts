import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { costAccountingVariable } from '../shared/platform/cost-accounting.ts';
import { childResult } from './child-result.ts';
import { listPrices, type CostFigure } from './cost-model.ts';
import type { CostBenchResult } from './cost-runtime.ts';

export type { CostBenchResult };

/**
 * The cost of a chat turn, a webhook delivery and a call minute, beside the SDK floor's turn, counted from the
 * requests they make (bench/cost-runtime.ts, in a child process of its own, writing them down in a file of its own).
 */
export async function measureCost(dynamodbEndpoint: string, tableName: string): Promise<CostBenchResult> {
  const directory = mkdtempSync(join(tmpdir(), 'bench-cost-'));
  const file = join(directory, 'requests.jsonl');
  writeFileSync(file, '');
  try {
    return await childResult<CostBenchResult>('cost-runtime.ts', dynamodbEndpoint, tableName, { [costAccountingVariable]: file });
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

/** The report's section: each piece of work's units and counts, and its dollars per 1,000 at list prices. */
export function costReport(result: CostBenchResult): string[] {
  const rows: [string, CostFigure, number][] = [
    ['chat turn (streamed, open session)', result.perTurn, 1000],
    [`chat turn, in a session of ${result.turnsPerSession}`, result.perTurnInSession, 1000],
    ['session opened and closed', result.perSession, 1000],
    ['webhook delivery', result.perWebhookDelivery, 1000],
    [`call minute (${result.callExchanges} exchanges)`, result.perCallMinute, 1000],
    ['usage roll-up', result.perUsageRollup, 1000],
    ['SDK floor turn (3 DynamoDB calls)', result.floorPerTurn, 1000],
  ];
  const format = (value: number, digits: number) => value.toFixed(digits);
  return [
    '',
    `16. Cost, counted from the requests made (COST_ACCOUNTING_FILE; bench/cost-runtime.ts): ${result.turns} streamed turns against a stub model, ${result.webhookDeliveries} webhook deliveries, a ${result.callSeconds} s call; Lambda arm64 at each function's memory (functions/lambda-functions.ts), list prices of ${listPrices.region} (${listPrices.checked})`,
    table(
      ['work', 'DDB req', 'RRU', 'WRU', 'EB events', 'SQS req', 'Lambda inv', 'GB-s', 'API req', '$ per 1,000'],
      rows.map(([name, figure]) => [
        name,
        format(figure.dynamodb.requests, 2),
        format(figure.dynamodb.readUnits, 2),
        format(figure.dynamodb.writeUnits, 2),
        format(figure.eventBridge.events + figure.eventBridge.schedulerInvocations, 2),
        format(figure.sqs.requests + figure.sqs.fifoRequests, 2),
        format(figure.lambda.invocations, 2),
        format(figure.lambda.gbSeconds, 4),
        format(figure.apiGateway.httpApiRequests + figure.apiGateway.restApiRequests + figure.apiGateway.websocketMessages, 2),
        format(figure.dollars.total * 1000, 4),
      ]),
    ),
    `   Load average ${result.loadAverage.start.toFixed(1)} at the start, ${result.loadAverage.end.toFixed(1)} at the end, on ${result.loadAverage.cores} cores: Lambda's durations (GB-s) include the time spent waiting for a core.`,
    `   A turn costs ${(result.perTurn.dollars.total / result.floorPerTurn.dollars.total).toFixed(1)}× the SDK floor's; dollars per 1,000 turns: DynamoDB ${format(result.perTurn.dollars.dynamodb * 1000, 4)}, Lambda ${format(result.perTurn.dollars.lambda * 1000, 4)}, API Gateway and CloudFront ${format((result.perTurn.dollars.apiGateway + result.perTurn.dollars.cloudFront) * 1000, 4)}, EventBridge ${format(result.perTurn.dollars.eventBridge * 1000, 4)}, SQS ${format(result.perTurn.dollars.sqs * 1000, 4)}`,
  ];
}

function table(header: string[], rows: string[][]): string {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)));
  const line = (cells: string[]) => `   ${cells.map((cell, column) => (column === 0 ? cell.padEnd(widths[column] as number) : cell.padStart(widths[column] as number))).join('  ')}`;
  return [line(header), `   ${widths.map((width) => '-'.repeat(width)).join('  ')}`, ...rows.map(line)].join('\n');
}
