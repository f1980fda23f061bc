import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { closeServer, listenOnLoopback } from './loopback-server.ts';

/** What a receiver got: one request, its signature checked with every secret the test knows for the endpoint. */
export interface Receipt {
  path: string;
  webhookId: string;
  headers: IncomingHttpHeaders;
  body: Record<string, any>;
  verified: boolean;
  at: number;
}

/**
 * A local webhook receiver. Each path behaves as its name says: `/ok…`; `/flaky/<n>` fails the first n requests of
 * each event; `/down` fails until `up` is set; `/slow` answers after 2 s; `/gone` answers 410; `/busy` answers 503
 * with `Retry-After: 2` once per event. Requests are verified with the secrets registered for their path.
 */
export class Receiver {
  readonly receipts: Receipt[] = [];
  readonly secrets = new Map<string, string[]>();
  up = false;
  private readonly server: Server;
  private readonly seen = new Map<string, number>();

  constructor() {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const path = request.url ?? '/';
        const raw = Buffer.concat(chunks).toString('utf8');
        const webhookId = String(request.headers['webhook-id']);
        const verified = (this.secrets.get(path) ?? []).some((secret) => {
          try {
            new Webhook(secret).verify(raw, request.headers as Record<string, string>);
            return true;
          } catch {
            return false;
          }
        });
        this.receipts.push({ path, webhookId, headers: request.headers, body: JSON.parse(raw), verified, at: Date.now() });
        const key = `${path} ${webhookId}`;
        const count = (this.seen.get(key) ?? 0) + 1;
        this.seen.set(key, count);
        const answer = (status: number, headers: Record<string, string> = {}) => response.writeHead(status, headers).end(status < 300 ? '' : 'receiver says no');
        if (path.startsWith('/ok')) return answer(204);
        const flaky = /^\/flaky\/(\d+)/.exec(path);
        if (flaky) return answer(count <= Number(flaky[1]) ? 500 : 200);
        if (path === '/down') return answer(this.up ? 200 : 503);
        if (path === '/slow') return void setTimeout(() => answer(200), 2_000);
        if (path === '/gone') return answer(410);
        if (path === '/busy') return answer(count === 1 ? 503 : 200, count === 1 ? { 'retry-after': '2' } : {});
        return answer(404);
      });
    });
  }

  async start(): Promise<string> {
    return `http://127.0.0.1:${await listenOnLoopback(this.server)}`;
  }

  for(path: string): Receipt[] {
    return this.receipts.filter((receipt) => receipt.path === path);
  }

  /** The path's receipts, one per event (its first delivery): a delivery is at least once, so an event may come twice. */
  eventsFor(path: string): Receipt[] {
    return [...new Map(this.for(path).reverse().map((receipt) => [receipt.webhookId, receipt])).values()].reverse();
  }

  close(): Promise<void> {
    return closeServer(this.server);
  }
}
