import type { AnalysisDeps } from './domain/analysis.ts';
import { builtinAnalysis } from './models/builtin-analysis.ts';
import { createLanguageModel } from './models/providers.ts';
import { structuredAnalyzer } from './models/structured-analysis.ts';
import type { AnalysisQueue, Analyzer } from './ports.ts';
import { scheduledQueueFrom } from './queue/sqs-scheduled-queue.ts';
import { runtime, type Runtime } from './runtime.ts';

/**
 * The runtime plus post-session analysis: the analyzers (the built-in rules, or a provider model through the AI
 * SDK) and the analysis queue. Only the analysis functions import this, so the others do not load the AI SDK.
 */
export interface AnalysisRuntime extends Runtime {
  analyzerFor: AnalysisDeps['analyzerFor'];
  queue: AnalysisQueue;
}

let processRuntime: AnalysisRuntime | undefined;

export function analysisRuntime(): AnalysisRuntime {
  if (!processRuntime) {
    const base = runtime();
    const analyzers = new Map<string, Analyzer>();
    processRuntime = {
      ...base,
      analyzerFor: (model) => {
        let analyzer = analyzers.get(model.id);
        if (!analyzer) {
          analyzer = model.provider === 'builtin' ? async (input) => builtinAnalysis(input) : structuredAnalyzer(createLanguageModel(model, base.config));
          analyzers.set(model.id, analyzer);
        }
        return analyzer;
      },
      queue: scheduledQueueFrom(base.config, 'ANALYSIS_QUEUE_URL'),
    };
  }
  return processRuntime;
}
