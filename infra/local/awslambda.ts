import type { ServerResponse } from 'node:http';
import { Writable } from 'node:stream';

/**
 * Lambda's response-streaming runtime API (`awslambda.streamifyResponse`, `awslambda.HttpResponseStream`) as a
 * global, as the Node.js runtime provides it, so streaming handlers run unchanged on the local runtime.
 */
export const streamingHandlerMarker = Symbol.for('agent-platform.local.streamifyResponse');

interface Prelude {
  statusCode?: number;
  headers?: Record<string, string | number | boolean>;
  cookies?: string[];
}

/** The response stream handed to a streaming handler: metadata becomes the status line and headers. */
export class LocalResponseStream extends Writable {
  private readonly response: ServerResponse;

  constructor(response: ServerResponse) {
    super();
    this.response = response;
    response.on('close', () => {
      if (!response.writableFinished) this.destroy(Object.assign(new Error('client disconnected'), { code: 'ABORT_ERROR' }));
    });
  }

  setPrelude(prelude: Prelude): void {
    this.response.statusCode = prelude.statusCode ?? 200;
    for (const [name, value] of Object.entries(prelude.headers ?? {})) this.response.setHeader(name, String(value));
    if (prelude.cookies?.length) this.response.setHeader('set-cookie', prelude.cookies);
    // Headers leave now, so a client sees the response begin before the first token.
    this.response.flushHeaders();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    if (chunk.length === 0) return callback();
    this.response.write(chunk, callback);
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.response.end(callback);
  }
}

/** Fills in what is missing: the AWS SDK's invoke store may already have created `awslambda` with other members. */
export function installAwsLambdaGlobal(): void {
  const global = globalThis as { awslambda?: Record<string, unknown> };
  const lambda = (global.awslambda ??= {});
  lambda.streamifyResponse ??= <T extends (...args: never[]) => unknown>(handler: T): T =>
    Object.assign((...args: Parameters<T>) => handler(...args), { [streamingHandlerMarker]: true }) as unknown as T;
  lambda.HttpResponseStream ??= {
    from(stream: LocalResponseStream, prelude: Prelude): LocalResponseStream {
      stream.setPrelude(prelude);
      return stream;
    },
  };
}
