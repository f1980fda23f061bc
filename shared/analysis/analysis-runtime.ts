import type { AnalysisDeps } from './analysis.ts';
import { builtinAnalysis } from './builtin-analysis.ts';
import { createLanguageModel } from '../models/model-providers.ts';
import { structuredAnalyzer } from './structured-analysis.ts';
import type { Analyzer } from './ports.ts';
import { runtime, type Runtime } from '../runtime.ts';

/**
 * The runtime plus the analyzers of post-session analysis (the built-in rules, or a provider model through the AI
 * SDK). Only the analysis function imports this, so the others do not load the AI SDK.
 */
export interface AnalysisRuntime extends Runtime {
  analyzerFor: AnalysisDeps['analyzerFor'];
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
    };
  }
  return processRuntime;
}
