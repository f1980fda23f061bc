/** One block of a server-sent-events stream, up to its blank line: its fields and comment lines. */
export interface SseBlock {
  id?: string;
  event?: string;
  data?: string;
  retry?: string;
  comments: string[];
}

/**
 * A long-lived SSE response read as it arrives, for streams that do not end by themselves. Each block is parsed
 * strictly (`field: value` lines, `: comment` lines) so that framing mistakes fail the test.
 */
export class SseClient {
  readonly status: number;
  readonly headers: Headers;
  readonly blocks: SseBlock[] = [];
  /** Settles when the server ends the stream (or the client closes it); rejects on a framing mistake. */
  readonly ended: Promise<void>;
  private readonly controller: AbortController;
  private failure: Error | undefined;

  private constructor(response: Response, controller: AbortController) {
    this.status = response.status;
    this.headers = response.headers;
    this.controller = controller;
    this.ended = this.read(response);
    this.ended.catch((error: Error) => {
      this.failure = error;
    });
  }

  static async open(url: string, headers: Record<string, string>): Promise<SseClient> {
    const controller = new AbortController();
    const response = await fetch(url, { headers, signal: controller.signal });
    if (response.status !== 200) throw new Error(`event stream answered ${response.status}: ${await response.text()}`);
    return new SseClient(response, controller);
  }

  /** The event blocks (those with data). */
  get events(): (SseBlock & { id: string; event: string; data: string })[] {
    return this.blocks.filter((block): block is SseBlock & { id: string; event: string; data: string } => block.data !== undefined);
  }

  /** The id a browser's EventSource would send as Last-Event-ID now: the last `id:` of any block. */
  get lastEventId(): string | undefined {
    return this.blocks.findLast((block) => block.id !== undefined)?.id;
  }

  async waitFor(condition: (client: SseClient) => boolean, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!condition(this)) {
      if (this.failure) throw this.failure;
      if (Date.now() > deadline) throw new Error(`timed out; blocks so far: ${JSON.stringify(this.blocks)}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  close(): void {
    this.controller.abort();
  }

  private async read(response: Response): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let end = buffer.indexOf('\n\n');
        while (end >= 0) {
          this.blocks.push(parseBlock(buffer.slice(0, end)));
          buffer = buffer.slice(end + 2);
          end = buffer.indexOf('\n\n');
        }
      }
    } catch (error) {
      if ((error as Error).name !== 'AbortError') throw error;
    }
    if (buffer !== '') throw new Error(`stream ended inside a block: ${JSON.stringify(buffer)}`);
  }
}

function parseBlock(text: string): SseBlock {
  const block: SseBlock = { comments: [] };
  for (const line of text.split('\n')) {
    if (line.startsWith(': ')) {
      block.comments.push(line.slice(2));
      continue;
    }
    const field = /^(id|event|data|retry): (.*)$/.exec(line);
    if (!field) throw new Error(`malformed SSE line: ${JSON.stringify(line)}`);
    const name = field[1] as 'id' | 'event' | 'data' | 'retry';
    if (block[name] !== undefined) throw new Error(`repeated ${name} in one block: ${JSON.stringify(text)}`);
    block[name] = field[2] as string;
  }
  return block;
}
