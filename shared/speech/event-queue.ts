/**
 * Events pushed by callbacks (a socket's messages) and read by one `for await`: what a transcription stream's
 * `events` is made of. Pushes after the end are dropped.
 */
export class EventQueue<Event> implements AsyncIterable<Event> {
  #buffered: Event[] = [];
  #waiting: ((result: IteratorResult<Event>) => void) | undefined;
  #ended = false;

  push(event: Event): void {
    if (this.#ended) return;
    const waiting = this.#waiting;
    this.#waiting = undefined;
    if (waiting) waiting({ value: event, done: false });
    else this.#buffered.push(event);
  }

  /** No more events; what is buffered is still read. `drop` forgets it too (a stream closed at once). */
  end(drop = false): void {
    this.#ended = true;
    if (drop) this.#buffered = [];
    const waiting = this.#waiting;
    this.#waiting = undefined;
    waiting?.({ value: undefined, done: true });
  }

  get ended(): boolean {
    return this.#ended;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Event> {
    for (;;) {
      const next = this.#buffered.shift();
      if (next !== undefined) {
        yield next;
        continue;
      }
      if (this.#ended) return;
      const result = await new Promise<IteratorResult<Event>>((resolve) => {
        this.#waiting = resolve;
      });
      if (result.done) return;
      yield result.value;
    }
  }
}

/** A socket's text message as JSON, or undefined when it is not JSON (the adapters' schemas then ignore it). */
export function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
