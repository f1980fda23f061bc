import type { AnalyticsStore } from './ports.ts';
import type { AnalyticsQuery, AnalyticsResponse, AnalyticsSummary } from './analytics-schemas.ts';
import type { Counts } from './exactly-once-counter.ts';
import { percentiles } from './analytics.ts';
import type { Clock } from '../platform/clock.ts';
import { assertOrdered, bucketsBetween } from './usage-report.ts';
import { addCounts, bucketOf } from './usage.ts';

export interface AnalyticsReportDeps {
  analytics: AnalyticsStore;
  clock: Clock;
}

const defaultRangeMs = { day: 30 * 24 * 60 * 60 * 1000, hour: 48 * 60 * 60 * 1000 };
const topIntentCount = 10;

/**
 * The analytics of an organization (or one agent) from `from` to `to` (default: the last 30 days, or 48 hours by
 * hour): totals over the range and a series per bucket, summed from the pre-aggregated items.
 */
export async function analyticsOverview(deps: AnalyticsReportDeps, orgId: string, query: AnalyticsQuery): Promise<AnalyticsResponse> {
  const to = query.to ? new Date(query.to) : deps.clock.now();
  const from = query.from ? new Date(query.from) : new Date(to.getTime() - defaultRangeMs[query.granularity]);
  assertOrdered(from, to);
  const buckets = bucketsBetween(from, to, query.granularity);
  const aggregates = await deps.analytics.aggregates(orgId, query.granularity, bucketOf(from.toISOString(), query.granularity), bucketOf(to.toISOString(), query.granularity), query.agentId);
  const totals: Counts = {};
  const byBucket = new Map<string, Counts>();
  for (const aggregate of aggregates) {
    addCounts(totals, aggregate.counts);
    let bucketCounts = byBucket.get(aggregate.bucket);
    if (!bucketCounts) {
      bucketCounts = {};
      byBucket.set(aggregate.bucket, bucketCounts);
    }
    addCounts(bucketCounts, aggregate.counts);
  }
  return {
    from: from.toISOString(),
    to: to.toISOString(),
    granularity: query.granularity,
    agentId: query.agentId ?? null,
    totals: summary(totals),
    series: buckets.map(({ start, end }) => {
      const counts = byBucket.get(bucketOf(start.toISOString(), query.granularity)) ?? {};
      return {
        start: start.toISOString(),
        end: end.toISOString(),
        sessions: counts.sessions ?? 0,
        ended: counts.ended ?? 0,
        messages: counts.messages ?? 0,
        toolCalls: counts.toolCalls ?? 0,
        toolErrors: counts.toolErrors ?? 0,
        voiceMinutes: minutes(counts.voiceSeconds ?? 0),
      };
    }),
  };
}

/** The series as CSV: a header line, then one line per bucket. */
export function analyticsCsv(report: AnalyticsResponse): string {
  const columns = ['start', 'end', 'sessions', 'ended', 'messages', 'toolCalls', 'toolErrors', 'voiceMinutes'] as const;
  return [columns.join(','), ...report.series.map((point) => columns.map((column) => point[column]).join(','))].join('\r\n') + '\r\n';
}

function summary(counts: Counts): AnalyticsSummary {
  const ended = counts.ended ?? 0;
  const perSession = percentiles(counts, 'messagesPerSession');
  const toolCalls = counts.toolCalls ?? 0;
  const toolErrors = counts.toolErrors ?? 0;
  return {
    sessions: {
      total: counts.sessions ?? 0,
      ended,
      byType: tally(counts, 'type:'),
      byPlatform: tally(counts, 'platform:'),
      byState: tally(counts, 'state:'),
      byEndedReason: tally(counts, 'reason:'),
    },
    durationSeconds: percentiles(counts, 'durationSeconds'),
    messages: counts.messages ?? 0,
    messagesPerSession: {
      mean: ended > 0 ? Math.round(((counts.messagesInEnded ?? 0) / ended) * 100) / 100 : null,
      p50: perSession?.p50 ?? null,
      p95: perSession?.p95 ?? null,
    },
    resolution: tally(counts, 'resolution:'),
    sentiment: tally(counts, 'sentiment:'),
    topIntents: Object.entries(tally(counts, 'intent:'))
      .map(([intent, count]) => ({ intent, count }))
      .sort((a, b) => b.count - a.count || a.intent.localeCompare(b.intent))
      .slice(0, topIntentCount),
    tools: { calls: toolCalls, errors: toolErrors, errorRate: toolCalls > 0 ? Math.round((toolErrors / toolCalls) * 10_000) / 10_000 : null },
    timings: { modelFirstTokenMs: percentiles(counts, 'modelFirstTokenMs'), platformMs: percentiles(counts, 'platformMs') },
    voiceMinutes: minutes(counts.voiceSeconds ?? 0),
  };
}

function tally(counts: Counts, prefix: string): Record<string, number> {
  return Object.fromEntries(Object.entries(counts).filter(([name]) => name.startsWith(prefix)).map(([name, value]) => [name.slice(prefix.length), value]));
}

const minutes = (seconds: number) => Math.round((seconds / 60) * 100) / 100;
