/** Splits a server-sent-events body into its `data:` payloads, checking the framing is exactly `data: …\n\n`. */
export function sseData(body: string): string[] {
  if (!body.endsWith('\n\n')) throw new Error(`SSE body does not end with a blank line: ${JSON.stringify(body.slice(-40))}`);
  return body
    .slice(0, -2)
    .split('\n\n')
    .map((event) => {
      if (!event.startsWith('data: ') || event.includes('\n')) throw new Error(`malformed SSE event: ${JSON.stringify(event)}`);
      return event.slice('data: '.length);
    });
}

/** The deltas of a reply stream, asserting it ends with `[DONE]`. */
export function replyDeltas(body: string): { id: string; delta: string }[] {
  const data = sseData(body);
  if (data.at(-1) !== '[DONE]') throw new Error('reply stream does not end with [DONE]');
  return data.slice(0, -1).map((item) => JSON.parse(item) as { id: string; delta: string });
}
