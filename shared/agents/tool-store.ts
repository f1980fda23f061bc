import { BatchGetCommand, GetCommand, TransactWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ToolNameTakenError } from '../platform/errors.ts';
import type { ToolStore } from './ports.ts';
import type { IdempotencyCompletion, SecretCipher, SecretContext } from '../platform/ports.ts';
import type { ExecutableTool, Tool } from './tool-schemas.ts';
import { transactionCancellationCodes } from '../platform/store/dynamo.ts';
import { transactWithCompletion } from '../platform/store/idempotency-store.ts';
import { toRecord } from '../platform/store/items.ts';
import { replaceFields } from '../platform/store/replace-fields.ts';
import { keys } from '../platform/store/keys.ts';
import { queryAll } from '../platform/store/query-all.ts';

const toolFieldOrder = [
  'id', 'orgId', 'name', 'description', 'type', 'ajvPropertiesSchema', 'preExecutionMessage', 'apiTool', 'createdAt', 'updatedAt',
];

export const toTool = (item: Record<string, unknown>): Tool => toRecord<Tool>(item, toolFieldOrder);

const secretContext = (orgId: string, toolId: string): SecretContext => ({ orgId, purpose: 'function-tool-secret', id: toolId });

/** The tool with its signing secret, opened, for the turn that runs it; never for a response. */
export async function toExecutableTool(cipher: SecretCipher, item: Record<string, unknown>): Promise<ExecutableTool> {
  const tool = toTool(item);
  if (typeof item.functionSecret !== 'string') return tool;
  return { ...tool, functionSecret: await cipher.open(item.functionSecret, secretContext(tool.orgId, tool.id)) };
}

/**
 * Tools live in their organization's partition, with a claim item that makes names unique per organization. A
 * FUNCTION_TOOL's signing secret (`functionSecret`) is sealed by `cipher` (docs/security.md#secrets-at-rest).
 */
export class DynamoToolStore implements ToolStore {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly cipher: SecretCipher;

  constructor(client: DynamoDBDocumentClient, tableName: string, cipher: SecretCipher) {
    this.client = client;
    this.tableName = tableName;
    this.cipher = cipher;
  }

  async create(tool: Tool, functionSecret?: string, completion?: IdempotencyCompletion): Promise<void> {
    const sealed = functionSecret === undefined ? undefined : await this.cipher.seal(functionSecret, secretContext(tool.orgId, tool.id));
    try {
      await transactWithCompletion(
        this.client,
        this.tableName,
        [
          {
            Put: {
              TableName: this.tableName,
              Item: { ...keys.tool(tool.orgId, tool.id), entity: 'tool', attachCount: 0, ...tool, functionSecret: sealed },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
          {
            Put: {
              TableName: this.tableName,
              Item: { ...keys.toolName(tool.orgId, tool.name), entity: 'toolName', toolId: tool.id },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
        ],
        completion,
      );
    } catch (error) {
      if (transactionCancellationCodes(error)?.[1] === 'ConditionalCheckFailed') {
        throw new ToolNameTakenError(`A tool named ${tool.name} already exists in this organization.`, {
          details: [{ field: 'name', message: 'is already used by another tool' }],
        });
      }
      throw error;
    }
  }

  async get(orgId: string, toolId: string): Promise<Tool | undefined> {
    const result = await this.client.send(new GetCommand({ TableName: this.tableName, Key: keys.tool(orgId, toolId), ConsistentRead: true }));
    return result.Item ? toTool(result.Item) : undefined;
  }

  /** Tools by id with their secrets, in one batch; missing ones are left out. */
  async executableTools(orgId: string, toolIds: readonly string[]): Promise<ExecutableTool[]> {
    return Promise.all((await this.batchGet(orgId, toolIds)).map((item) => toExecutableTool(this.cipher, item)));
  }

  async definitions(orgId: string, toolIds: readonly string[]): Promise<Tool[]> {
    return (await this.batchGet(orgId, toolIds)).map((item) => toTool(item));
  }

  private async batchGet(orgId: string, toolIds: readonly string[]): Promise<Record<string, unknown>[]> {
    if (toolIds.length === 0) return [];
    const result = await this.client.send(
      new BatchGetCommand({ RequestItems: { [this.tableName]: { Keys: toolIds.map((toolId) => keys.tool(orgId, toolId)), ConsistentRead: true } } }),
    );
    return result.Responses?.[this.tableName] ?? [];
  }

  async list(orgId: string): Promise<Tool[]> {
    const items = await queryAll(this.client, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': keys.orgPartition(orgId), ':prefix': keys.toolPrefix },
      ConsistentRead: true,
    });
    return items.map((item) => toTool(item));
  }

  async replace(previous: Tool, next: Tool, functionSecret?: string): Promise<void> {
    const sealed = functionSecret ? { functionSecret: await this.cipher.seal(functionSecret, secretContext(next.orgId, next.id)) } : {};
    // An update rather than a put, so the attachment count maintained by agent writes is left alone.
    await replaceFields(this.client, { tableName: this.tableName, key: keys.tool(next.orgId, next.id), what: 'tool' }, previous, next, sealed);
  }

  async delete(orgId: string, toolId: string): Promise<'deleted' | 'attached' | 'missing'> {
    const tool = await this.get(orgId, toolId);
    if (!tool) return 'missing';
    try {
      await this.client.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Delete: {
                TableName: this.tableName,
                Key: keys.tool(orgId, toolId),
                ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(attachCount) OR attachCount = :zero)',
                ExpressionAttributeValues: { ':zero': 0 },
              },
            },
            { Delete: { TableName: this.tableName, Key: keys.toolName(orgId, tool.name) } },
          ],
        }),
      );
      return 'deleted';
    } catch (error) {
      if (transactionCancellationCodes(error)?.[0] === 'ConditionalCheckFailed') {
        return (await this.get(orgId, toolId)) ? 'attached' : 'missing';
      }
      throw error;
    }
  }
}
