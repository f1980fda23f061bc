import { createHmac, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A Stripe stand-in for the local runtime, speaking Stripe's wire protocol for what the platform uses:
 * - the API: `GET|POST|DELETE /v1/subscriptions/{id}` and `POST /v1/subscriptions`, form-encoded requests with a
 *   `Bearer sk_…` key, JSON answers in Stripe's shapes and error envelope;
 * - webhooks: events POSTed to the platform signed exactly as Stripe signs them (`Stripe-Signature:
 *   t=<unix s>,v1=<hex HMAC-SHA256 of "<t>.<body>">` with the `whsec_…` secret), so the official library verifies
 *   them; `POST /_simulator/events {type, object}` sends one (what the Stripe CLI's `trigger` does).
 */
export interface StripeSimulator {
  url: string;
  webhookSecret: string;
  /** The subscriptions as the simulator holds them, by id. */
  subscriptions: Map<string, Record<string, unknown>>;
  /** Sends a signed event to the webhook URL; resolves with the platform's answer status. */
  sendEvent(type: string, object: Record<string, unknown>): Promise<number>;
  stop(): Promise<void>;
}

export async function startStripeSimulator(options: { webhookUrl: string; webhookSecret?: string | undefined; host?: string }): Promise<StripeSimulator> {
  const webhookSecret = options.webhookSecret ?? `whsec_${randomBytes(24).toString('base64url')}`;
  const subscriptions = new Map<string, Record<string, unknown>>();

  async function sendEvent(type: string, object: Record<string, unknown>): Promise<number> {
    const body = JSON.stringify({
      id: `evt_${randomBytes(12).toString('hex')}`,
      object: 'event',
      api_version: '2025-10-29.clover',
      created: Math.floor(Date.now() / 1000),
      type,
      livemode: false,
      pending_webhooks: 1,
      data: { object },
    });
    const timestamp = Math.floor(Date.now() / 1000);
    const signature = createHmac('sha256', webhookSecret).update(`${timestamp}.${body}`).digest('hex');
    const response = await fetch(options.webhookUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-8', 'stripe-signature': `t=${timestamp},v1=${signature}`, 'user-agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)' },
      body,
    });
    await response.arrayBuffer();
    return response.status;
  }

  const server = createServer((request, response) => {
    void handle(request, response).catch((error: Error) => answer(response, 500, { error: { type: 'api_error', message: error.message } }));
  });

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const path = new URL(request.url ?? '/', 'http://simulator').pathname;
    if (request.method === 'POST' && path === '/_simulator/events') {
      const { type, object } = JSON.parse(raw) as { type: string; object: Record<string, unknown> };
      return answer(response, 200, { delivered: await sendEvent(type, object) });
    }
    if (!/^Bearer sk_\w+/.test(request.headers.authorization ?? '')) {
      return answer(response, 401, { error: { type: 'invalid_request_error', message: 'You did not provide a valid API key.' } });
    }
    const form = Object.fromEntries(new URLSearchParams(raw));
    const match = /^\/v1\/subscriptions(?:\/([\w-]+))?$/.exec(path);
    if (!match) return answer(response, 404, { error: { type: 'invalid_request_error', message: `Unrecognized request URL (${request.method}: ${path}).` } });
    const id = match[1];
    if (!id && request.method === 'POST') {
      const created = { id: `sub_${randomBytes(12).toString('hex')}`, object: 'subscription', status: 'active', items: { object: 'list', data: [{ id: `si_${randomBytes(8).toString('hex')}`, object: 'subscription_item' }] }, form };
      subscriptions.set(created.id, created);
      return answer(response, 200, created);
    }
    const subscription = id ? subscriptions.get(id) : undefined;
    if (!subscription) return answer(response, 404, { error: { type: 'invalid_request_error', code: 'resource_missing', message: `No such subscription: '${id}'` } });
    if (request.method === 'POST') Object.assign(subscription, { form: { ...(subscription.form as object), ...form } });
    if (request.method === 'DELETE') subscription.status = 'canceled';
    return answer(response, 200, subscription);
  }

  await new Promise<void>((listening) => server.listen(0, options.host ?? '127.0.0.1', listening));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${options.host ?? '127.0.0.1'}:${port}`,
    webhookSecret,
    subscriptions,
    sendEvent,
    stop: () => new Promise((closed) => server.close(() => closed())),
  };
}

function answer(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_${randomBytes(8).toString('hex')}` });
  response.end(JSON.stringify(body));
}
