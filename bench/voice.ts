import { childResult } from './child-result.ts';
import type { VoiceBenchResult } from './voice-runtime.ts';

export type { VoiceBenchResult };

/** Calls on the local runtime, in a child process of their own (bench/voice-runtime.ts). */
export function measureVoice(dynamodbEndpoint: string, tableName: string): Promise<VoiceBenchResult> {
  return childResult<VoiceBenchResult>('voice-runtime.ts', dynamodbEndpoint, tableName);
}
