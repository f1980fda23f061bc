import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ConcurrentModificationError, NotFoundError, ToolsNotFoundError } from '../platform/errors.ts';
import type { AgentChange, AgentStore } from './ports.ts';
import type { IdempotencyCompletion } from '../platform/ports.ts';
import type { Agent } from './agent-schemas.ts';
import type { AgentVersion } from './agent-version-schemas.ts';
import { outboxPut } from '../events/outbox.ts';
import { transactionCancellationCodes, type TransactItem } from '../platform/store/dynamo.ts';
import { transactWithCompletion } from '../platform/store/idempotency-store.ts';
import { toRecord } from '../platform/store/items.ts';
import { keys } from '../platform/store/keys.ts';
import { queryAll } from '../platform/store/query-all.ts';

const agentFieldOrder = [
  'id', 'orgId', 'fullName', 'description', 'role', 'language', 'systemPrompt', 'specialInstructions', 'modelId',
  'sttModelId', 'ttsModelId', 'stsModelId', 'voiceEnabled', 'voicePipelineMode', 'knowledgeStoreId', 'tools',
  'welcomeAllowInterruptions', 'analysis', 'publishMode', 'draftVersion', 'publishedVersion', 'isActive', 'isPublic', 'createdAt', 'updatedAt',
];

/** An agent stored before versions existed has no `publishMode`: it is `AUTO`, as it always behaved. */
export const toAgent = (item: Record<string, unknown>): Agent => toRecord<Agent>({ publishMode: 'AUTO', ...item }, agentFieldOrder);

export const toAgentVersion = (item: Record<string, unknown>): AgentVersion => {
  const { orgId, agentId, number, author, createdAt, configuration, tools } = item as unknown as AgentVersion;
  return { orgId, agentId, number, author, createdAt, configuration, tools };
};


/**
 * Agents live in their organization's partition. Each tool keeps a count of the agents it is attached to, changed
 * in the same transaction as the agent, so a tool can never be deleted while attached and an agent can never
 * attach a tool that is gone.
 */
export class DynamoAgentStore implements AgentStore {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;

  constructor(client: DynamoDBDocumentClient, tableName: string) {
    this.client = client;
    this.tableName = tableName;
  }

  async create(agent: Agent, change: AgentChange, completion?: IdempotencyCompletion): Promise<void> {
    const toolIds = agent.tools.map((tool) => tool.toolId);
    await this.writeWithAttachments(
      {
        Put: {
          TableName: this.tableName,
          Item: { ...keys.agent(agent.orgId, agent.id), entity: 'agent', ...agent },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
      agent,
      toolIds,
      [],
      change,
      completion,
    );
  }

  async getVersion(orgId: string, agentId: string, number: number): Promise<AgentVersion | undefined> {
    const result = await this.client.send(new GetCommand({ TableName: this.tableName, Key: keys.agentVersion(orgId, agentId, number), ConsistentRead: true }));
    return result.Item ? toAgentVersion(result.Item) : undefined;
  }

  async listVersions(orgId: string, agentId: string): Promise<AgentVersion[]> {
    const items = await queryAll(this.client, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': keys.agentPartition(orgId, agentId), ':prefix': keys.agentVersionPrefix },
      ConsistentRead: true,
    });
    return items.map((item) => toAgentVersion(item));
  }

  async get(orgId: string, agentId: string): Promise<Agent | undefined> {
    const result = await this.client.send(new GetCommand({ TableName: this.tableName, Key: keys.agent(orgId, agentId), ConsistentRead: true }));
    return result.Item ? toAgent(result.Item) : undefined;
  }

  async list(orgId: string): Promise<Agent[]> {
    const items = await queryAll(this.client, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': keys.orgPartition(orgId), ':prefix': keys.agentPrefix },
      ConsistentRead: true,
    });
    return items.map((item) => toAgent(item));
  }

  async replace(previous: Agent, next: Agent, change: AgentChange): Promise<void> {
    const before = new Set(previous.tools.map((tool) => tool.toolId));
    const after = new Set(next.tools.map((tool) => tool.toolId));
    await this.writeWithAttachments(
      {
        Put: {
          TableName: this.tableName,
          Item: { ...keys.agent(next.orgId, next.id), entity: 'agent', ...next },
          // updatedAt changes on every write, so it serves as the optimistic-lock version.
          ConditionExpression: 'updatedAt = :previousUpdatedAt',
          ExpressionAttributeValues: { ':previousUpdatedAt': previous.updatedAt },
        },
      },
      next,
      [...after].filter((id) => !before.has(id)),
      [...before].filter((id) => !after.has(id)),
      change,
    );
  }

  async delete(orgId: string, agentId: string): Promise<boolean> {
    const agent = await this.get(orgId, agentId);
    if (!agent) return false;
    await this.writeWithAttachments(
      {
        Delete: {
          TableName: this.tableName,
          Key: keys.agent(orgId, agentId),
          ConditionExpression: 'updatedAt = :updatedAt',
          ExpressionAttributeValues: { ':updatedAt': agent.updatedAt },
        },
      },
      agent,
      [],
      agent.tools.map((tool) => tool.toolId),
      { events: [] },
    );
    return true;
  }

  private async writeWithAttachments(
    agentWrite: TransactItem,
    agent: Pick<Agent, 'orgId' | 'id'>,
    attach: string[],
    detach: string[],
    change: AgentChange,
    completion?: IdempotencyCompletion,
  ): Promise<void> {
    const orgId = agent.orgId;
    const countChange = (toolId: string, delta: 1 | -1): TransactItem => ({
      Update: {
        TableName: this.tableName,
        Key: keys.tool(orgId, toolId),
        UpdateExpression: 'ADD attachCount :delta',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':delta': delta },
      },
    });
    const toolItems = [...attach.map((id) => countChange(id, 1)), ...detach.map((id) => countChange(id, -1))];
    const partition = keys.agentPartition(orgId, agent.id);
    const recorded: TransactItem[] = [
      ...(change.version ? [this.versionPut(change.version)] : []),
      ...change.events.map((event) => outboxPut(this.tableName, partition, event)),
    ];
    try {
      // The tool counts come right after the agent: translate() reads their cancellation reasons by position.
      await transactWithCompletion(this.client, this.tableName, [agentWrite, ...toolItems, ...recorded], completion);
    } catch (error) {
      throw this.translate(error, attach);
    }
  }

  private versionPut(version: AgentVersion): TransactItem {
    return {
      Put: {
        TableName: this.tableName,
        Item: { ...keys.agentVersion(version.orgId, version.agentId, version.number), entity: 'agentVersion', ...version },
        // Versions are immutable: a number is taken once (the agent's own condition already orders the writers).
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    };
  }

  private translate(error: unknown, attach: string[]): unknown {
    const codes = transactionCancellationCodes(error);
    if (!codes) return error;
    const missing = attach.filter((_, index) => codes[index + 1] === 'ConditionalCheckFailed');
    if (missing.length > 0) {
      return new ToolsNotFoundError(`Tools not found: ${missing.join(', ')}`, {
        details: missing.map((toolId) => ({ field: 'tools', message: `tool ${toolId} does not exist` })),
      });
    }
    if (codes[0] === 'ConditionalCheckFailed') {
      return new ConcurrentModificationError('The agent changed while it was being updated; retry.');
    }
    if (codes.some((code) => code === 'ConditionalCheckFailed')) {
      // A detached tool vanished; only a forced tool delete does that, and it detaches first.
      return new NotFoundError('A tool attached to this agent was deleted meanwhile; retry.');
    }
    return error;
  }
}
