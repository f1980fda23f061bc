import { randomBytes } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { speechProviderAddresses } from '../../functions/settings.ts';
import { startDynamoDbLocal, type DynamoDbLocal } from './dynamodb-local.ts';
import { ensureTable } from './table.ts';

export const defaultTableName = 'agent-platform';

/**
 * Where the local runtime reaches the providers and they reach it. Each one the environment names before the start
 * wins over the simulator's (docs/local-runtime.md#a-real-provider-or-another-double).
 */
export const providerAddressVariables = [
  'TWILIO_API_BASE_URL',
  'WHATSAPP_GRAPH_API_URL',
  'PUBLIC_BASE_URL',
  'VOICE_RELAY_URL',
  'MEDIA_WORKER_URL',
  ...speechProviderAddresses,
] as const;

export function dataDirectory(env: NodeJS.ProcessEnv = process.env): string {
  return resolve(env.DATA_DIR ?? '.data');
}

/**
 * Written by a running `npm start` as `DATA_DIR/running.json`, so that the command-line tools (`npm run keys`,
 * `call`, `whatsapp`) on the same DATA_DIR find its database, its API and its simulators.
 */
export interface RunningInstance {
  pid: number;
  /** Where the API answers, e.g. `http://127.0.0.1:3000` (loopback when it listens on every interface). */
  apiUrl?: string;
  dynamodbEndpoint: string;
  tableName: string;
  /** The Twilio simulator's address (`npm run call` attaches to it). */
  twilioSimulator?: string;
  /** The WhatsApp simulator's address (`npm run whatsapp` attaches to it). */
  whatsappSimulator?: string;
}

const instanceFile = (dataDir: string) => join(dataDir, 'running.json');

export function announceRunningInstance(dataDir: string, instance: RunningInstance): () => void {
  writeFileSync(instanceFile(dataDir), JSON.stringify(instance));
  return () => rmSync(instanceFile(dataDir), { force: true });
}

export function findRunningInstance(dataDir: string): RunningInstance | undefined {
  const file = instanceFile(dataDir);
  if (!existsSync(file)) return undefined;
  const instance = JSON.parse(readFileSync(file, 'utf8')) as RunningInstance;
  try {
    process.kill(instance.pid, 0);
    return instance;
  } catch {
    return undefined;
  }
}

/** The address clients on this machine reach a server listening on `host:port` at. */
export function localUrl(host: string, port: number): string {
  const reachable = host === '0.0.0.0' || host === '::' || host === '' ? '127.0.0.1' : host;
  return `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}`;
}

/** `DATA_DIR=<dir> ` to put before a command when DATA_DIR is not the default, quoted for a POSIX shell. */
export function dataDirPrefix(env: NodeJS.ProcessEnv = process.env): string {
  if (env.DATA_DIR === undefined) return '';
  const dir = dataDirectory(env);
  return `DATA_DIR=${/^[\w@%+=:,./-]+$/.test(dir) ? dir : `'${dir.replaceAll("'", "'\\''")}'`} `;
}

/** What a command-line tool says (on stderr, so its stdout stays what it prints) about the instance it works with. */
export function describeInstance(instance: RunningInstance, dataDir: string): string {
  return `Using the npm start running on ${instance.apiUrl ?? 'this machine'} (DATA_DIR ${dataDir}, pid ${instance.pid}).`;
}

/** Why a command-line tool found no instance to work with, and what to do. */
export function noRunningInstance(command: string, dataDir: string): string {
  return [
    `No npm start is running on DATA_DIR ${dataDir} (no running.json of a live process there).`,
    `Start it, or run ${command} with the DATA_DIR npm start printed ("data in …"): DATA_DIR=<that directory> npm run ${command} …`,
  ].join('\n');
}

export interface LocalDatabase {
  endpoint: string;
  tableName: string;
  stop(): Promise<void>;
}

/**
 * DynamoDB Local with the table in place: persisted under `dataDir`, or in memory when it is undefined. The
 * handlers find it through the same variables they read on AWS (plus DYNAMODB_ENDPOINT).
 */
export async function startLocalDatabase(options: { dataDir?: string; tableName?: string }): Promise<LocalDatabase> {
  const tableName = options.tableName ?? defaultTableName;
  const emulator: DynamoDbLocal = await startDynamoDbLocal(options.dataDir ? { dataDir: join(options.dataDir, 'dynamodb') } : {});
  try {
    await prepareTable(emulator.endpoint, tableName);
  } catch (error) {
    await emulator.stop();
    throw error;
  }
  return { endpoint: emulator.endpoint, tableName, stop: emulator.stop };
}

/**
 * A database someone else runs at `endpoint` (DYNAMODB_ENDPOINT set before `npm start`: the bench's DynamoDB Local
 * behind its counting proxy), with the table in place; stopping leaves it running.
 */
export async function useRunningDatabase(endpoint: string): Promise<LocalDatabase> {
  await prepareTable(endpoint, defaultTableName);
  return { endpoint, tableName: defaultTableName, stop: async () => undefined };
}

export async function prepareTable(endpoint: string, tableName: string): Promise<void> {
  const client = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  try {
    await ensureTable(client, tableName);
  } finally {
    client.destroy();
  }
}

/**
 * Points this process's handlers at a local database (which tools and webhooks may never reach); a set region is
 * kept. The secrets that database holds are sealed with the key file `DATA_DIR/secrets.key`, created on first use,
 * unless SECRETS_KEY_FILE names another or SECRETS_KMS_KEY_ID asks for KMS.
 */
export function useLocalDatabase(database: { endpoint: string; tableName: string }, env: NodeJS.ProcessEnv = process.env): void {
  env.DYNAMODB_ENDPOINT = database.endpoint;
  env.TABLE_NAME = database.tableName;
  env.AWS_REGION ??= 'us-east-1';
  if (!env.SECRETS_KMS_KEY_ID) env.SECRETS_KEY_FILE ??= ensureSecretsKeyFile(join(dataDirectory(env), 'secrets.key'));
  denyEgressTo(database.endpoint, env);
}

/**
 * Creates a local secrets key file (base64 of 32 random bytes, readable by its owner only) unless it exists, and
 * returns its path. Written aside and linked into place, so a process starting at the same moment reads either
 * no file or the whole key, and the first one to link wins.
 */
export function ensureSecretsKeyFile(file: string): string {
  if (existsSync(file)) return file;
  mkdirSync(dirname(file), { recursive: true });
  const draft = `${file}.${process.pid}.${Date.now()}`;
  writeFileSync(draft, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
  try {
    linkSync(draft, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    rmSync(draft, { force: true });
  }
  return file;
}

/**
 * Adds the port of one of the local runtime's own services (its DynamoDB, its SQS emulator, the API itself) to
 * `EGRESS_DENIED_PORTS`: those serve every organization, so no tool or webhook may reach them, whatever
 * `LOOPBACK_EGRESS_PORTS` opens. Call it before the handlers read their configuration.
 */
export function denyEgressTo(endpoint: string | number, env: NodeJS.ProcessEnv = process.env): void {
  const port = typeof endpoint === 'number' ? endpoint : Number(new URL(endpoint).port);
  const denied = (env.EGRESS_DENIED_PORTS ?? '').split(',').filter(Boolean);
  if (!denied.includes(String(port))) env.EGRESS_DENIED_PORTS = [...denied, String(port)].join(',');
}
