/**
 * What a turn's prompt carries besides the conversation, in the shapes the platform and its models agree on: the
 * turn engine (shared/conversations/turn.ts) writes them, the built-in model (builtin-model.ts) reads them. They
 * live here, below both, so that the built-in model depends on no context above models.
 */

/** The model-visible name of the built-in tool that lets an agent end the conversation (shared/conversations/turn.ts). */
export const endConversationTool = 'end_conversation';

/**
 * Opens a tool result the model is to say word for word: a hybrid voice turn's answer, made by the agent's text LLM
 * and handed to the speech-to-speech model to speak (docs/voice.md#hybrid).
 */
export const verbatimReplyPrefix = 'Say exactly this to the caller, and nothing else: ';

/** Starts the system message that carries a turn's retrieved knowledge excerpts to the model. */
const knowledgeContextHeading = 'Knowledge excerpts retrieved for this message. Answer from them when they are relevant, and cite them as [n]:';

export interface KnowledgeExcerpt {
  /** Where the text comes from, as the model cites it. */
  source: string;
  text: string;
}

/** The excerpts as the model sees them: `[n] <source>`, then the text, excerpts apart by a blank line (so none holds one). */
export function knowledgeContextMessage(excerpts: readonly KnowledgeExcerpt[]): string {
  const numbered = excerpts.map((excerpt, index) => `[${index + 1}] ${excerpt.source}\n${excerpt.text.replace(/\n{2,}/g, '\n')}`);
  return [knowledgeContextHeading, ...numbered].join('\n\n');
}

/** The first excerpt of such a message: its source line and text. */
export function firstExcerpt(context: string): KnowledgeExcerpt | undefined {
  if (!context.startsWith(knowledgeContextHeading)) return undefined;
  const match = /\n\n\[1\] ([^\n]*)\n([^]*?)(?=\n\n\[2\] |$)/.exec(context);
  return match ? { source: match[1]!, text: match[2]! } : undefined;
}
