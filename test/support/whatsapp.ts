import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { expect } from 'vitest';
import type { WhatsappSimulator } from '../../infra/local/whatsapp-simulator.ts';
import type { TestApi } from './api.ts';
import { eventually } from './eventually.ts';
import { createWeatherTool } from './voice.ts';

/** Meta's phone number id of a number no other test connects: numbers belong to one organization worldwide. */
export const uniquePhoneNumberId = (): string => `10${String(Math.floor(Math.random() * 1e13)).padStart(13, '0')}`;

/** A customer's WhatsApp id no other test writes from. */
export const uniqueCustomer = (): string => `316${String(Math.floor(Math.random() * 1e8)).padStart(8, '0')}`;

/** A business-scoped user id (BSUID) no other test writes from, in Meta's form (`US.` and digits). */
export const uniqueUserId = (): string => `US.${String(Math.floor(Math.random() * 1e15)).padStart(15, '0')}${Date.now() % 10_000}`;

export interface WhatsappOrg {
  key: string;
  orgId: string;
  agentId: string;
  numberId: string;
  phoneNumberId: string;
  secrets: { accessToken: string; appSecret: string; verifyToken: string };
}

/**
 * An organization with an agent (with a weather tool, announced by a pre-execution message, when `toolUrl` is
 * given) and a connected WhatsApp number whose secrets the simulator knows.
 */
export async function whatsappOrg(api: TestApi, options: { toolUrl?: string; number?: object } = {}): Promise<WhatsappOrg> {
  const { key, orgId } = await api.newOrg();
  const announced = { preExecutionMessage: 'One moment, I am checking the weather.' };
  const tools = options.toolUrl ? [{ toolId: await createWeatherTool(api, key, options.toolUrl, announced) }] : [];
  const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'Wanda', description: 'WhatsApp agent', role: 'You answer customers on WhatsApp.', tools } });
  expect(agent.status, agent.text).toBe(201);
  const phoneNumberId = uniquePhoneNumberId();
  const secrets = { accessToken: `EAA${randomBytes(16).toString('hex')}`, appSecret: randomBytes(16).toString('hex'), verifyToken: randomBytes(12).toString('hex') };
  api.whatsapp!.registerNumber(phoneNumberId, secrets);
  const number = await api.request('POST', '/v1/chat/whatsapp/numbers', {
    key,
    body: { phoneNumberId, displayPhoneNumber: '+1 555 010 0100', agentId: agent.body.id, ...secrets, ...options.number },
  });
  expect(number.status, number.text).toBe(201);
  return { key, orgId, agentId: agent.body.id, numberId: number.body.id, phoneNumberId, secrets };
}

/** What the simulator received for one customer from one number, once `count` messages are in. */
export async function repliesTo(simulator: WhatsappSimulator, org: WhatsappOrg, customer: string, count: number, timeoutMs = 15_000): Promise<string[]> {
  const replies = () => simulator.sent.filter((message) => message.phoneNumberId === org.phoneNumberId && message.to === customer).map((message) => message.body);
  return eventually(replies, (found) => found.length >= count, timeoutMs);
}

/** The organization's WhatsApp sessions with this customer, newest first. */
export async function customerSessions(api: TestApi, org: WhatsappOrg, customer: string): Promise<any[]> {
  const listed = await api.request('GET', '/v1/chat/chat/sessions?platform=WHATSAPP&limit=100', { key: org.key });
  expect(listed.status, listed.text).toBe(200);
  return listed.body.data.filter((session: any) => session.metadata.whatsapp?.customerWaId === customer);
}

export async function messagesOf(api: TestApi, org: WhatsappOrg, sessionId: string): Promise<any[]> {
  const listed = await api.request('GET', `/api/v1/chat/sessions/${sessionId}/messages?limit=100`, { key: org.key });
  expect(listed.status, listed.text).toBe(200);
  return listed.body.data;
}

/**
 * One of Meta's documented payloads kept in test/fixtures/meta/ (each file names its source), with its
 * placeholders filled: every string equal to a key becomes its value (of any type), and every occurrence of a key
 * inside a longer string its text.
 */
export function metaFixture(name: string, fill: Record<string, unknown> = {}): any {
  const { payload } = JSON.parse(readFileSync(new URL(`../fixtures/meta/${name}.json`, import.meta.url), 'utf8')) as { payload: unknown };
  const keys = Object.keys(fill).sort((a, b) => b.length - a.length);
  const filled = (value: unknown): unknown => {
    if (typeof value === 'string') return Object.hasOwn(fill, value) ? fill[value] : keys.reduce((text, key) => text.split(key).join(String(fill[key])), value);
    if (Array.isArray(value)) return value.map(filled);
    if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, filled(item)]));
    return value;
  };
  return filled(payload);
}
