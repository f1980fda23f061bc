import type { MetricDefinition } from '../platform/ports.ts';

/** The operational metrics of post-session analysis (docs/deploy.md#dashboards-and-alarms), recorded by analysis.ts. */
export const analysisMetrics = {
  completed: { name: 'AnalysesCompleted', unit: 'Count', description: 'Analyses stored COMPLETED (first ones and re-runs)' },
  skipped: { name: 'AnalysesSkipped', unit: 'Count', description: 'Analyses stored SKIPPED (a session without a user message)' },
  failed: { name: 'AnalysesFailed', unit: 'Count', description: 'Analyses stored FAILED, whatever the reason (model error, invalid output, deadline, retries exhausted)' },
  deadlineExceeded: {
    name: 'AnalysisDeadlineExceeded',
    unit: 'Count',
    description: 'Analyses stored FAILED with ANALYSIS_DEADLINE_EXCEEDED: the run gave up at 80% of the deadline, or the deadline message found nothing sent',
  },
  endedLatency: {
    name: 'AnalysisEndedLatency',
    unit: 'Milliseconds',
    description: "From a session's recorded end to its session.ended (with the analysis) being stored, against ANALYSIS_DEADLINE_SECONDS",
  },
} as const satisfies Record<string, MetricDefinition>;
