/** The ports of the analysis context: the interfaces its use cases depend on, implemented by its adapters (issue 22 split shared/ports.ts by context). */
import type { AnalysisConfig } from '../agents/analysis-config-schemas.ts';
import type { AnalysisResult } from '../conversations/analysis-result-schemas.ts';
import type { AnalysisJob } from '../conversations/ports.ts';
import type { EndedReason } from '../conversations/session-schemas.ts';
import type { Transcript } from '../conversations/transcript.ts';
import type { ScheduledQueue } from '../platform/ports.ts';

/** A job on the analysis queue: run it, or (initial jobs only) make sure `session.ended` has left by its deadline. */
export interface AnalysisQueueMessage {
  kind: 'analysis.run' | 'analysis.deadline';
  job: AnalysisJob;
  /** Epoch ms before which the message must not be handled. */
  notBefore: number;
}

export type AnalysisQueue = ScheduledQueue<AnalysisQueueMessage>;

export interface AnalysisInput {
  transcript: Transcript;
  config: AnalysisConfig;
  /** The agent's language tag, when set. */
  language?: string | undefined;
  endedReason?: EndedReason | undefined;
}

/** What a model contributes to an analysis: the enabled blocks and the summary. */
export type AnalysisOutput = Pick<AnalysisResult, 'summary' | 'intent' | 'resolution' | 'sentiment' | 'extractedData'>;

/** A model that analyses sessions: the built-in rules, or a provider model asked for structured output. */
export type Analyzer = (input: AnalysisInput, signal: AbortSignal) => Promise<AnalysisOutput>;
