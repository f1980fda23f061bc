import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as z from 'zod';
import { denyEgressTo } from '../../infra/local/environment.ts';
import { LocalFlatVectorStore } from '../../shared/knowledge/local-flat-index.ts';
import { VectorIndexNotFoundError, VectorStoreLimitError } from '../../shared/knowledge/vector-store.ts';

/**
 * Amazon S3 Vectors' REST-JSON wire protocol (POST /<Operation>, JSON bodies, errors named by `x-amzn-errortype`)
 * for the operations the platform uses, with the request and response shapes of the API reference; the data
 * lives in a local flat index. Every request is recorded, so tests can check what the adapter sent.
 */
const target = { vectorBucketName: z.string().min(3), indexName: z.string().min(3) };
const metadata = z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.array(z.string())]));
const requestShapes = {
  CreateIndex: z.strictObject({
    ...target,
    dataType: z.literal('float32'),
    dimension: z.number().int().min(1).max(4096),
    distanceMetric: z.enum(['cosine', 'euclidean']),
    metadataConfiguration: z.strictObject({ nonFilterableMetadataKeys: z.array(z.string()).max(10) }).optional(),
  }),
  DeleteIndex: z.strictObject(target),
  PutVectors: z.strictObject({ ...target, vectors: z.array(z.strictObject({ key: z.string(), data: z.strictObject({ float32: z.array(z.number()) }), metadata: metadata.optional() })).min(1) }),
  DeleteVectors: z.strictObject({ ...target, keys: z.array(z.string()).min(1) }),
  QueryVectors: z.strictObject({
    ...target,
    topK: z.number().int(),
    queryVector: z.strictObject({ float32: z.array(z.number()) }),
    filter: z.record(z.string(), z.unknown()).optional(),
    returnMetadata: z.boolean().optional(),
    returnDistance: z.boolean().optional(),
  }),
  ListVectors: z.strictObject({ ...target, maxResults: z.number().int().min(1).max(1000).optional(), nextToken: z.string().optional(), returnMetadata: z.boolean().optional(), returnData: z.boolean().optional() }),
};
type Operation = keyof typeof requestShapes;

export class S3VectorsSimulator {
  readonly requests: { operation: string; body: any }[] = [];
  private readonly store: LocalFlatVectorStore;
  private server: Server | undefined;

  constructor(directory: string) {
    this.store = new LocalFlatVectorStore(directory);
  }

  async start(): Promise<string> {
    this.server = createServer((request, response) => void this.handle(request, response));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    const { port } = this.server.address() as AddressInfo;
    denyEgressTo(port);
    return `http://127.0.0.1:${port}`;
  }

  async close(): Promise<void> {
    await new Promise((resolve) => this.server?.close(resolve));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const operation = (request.url ?? '').slice(1) as Operation;
    const body: unknown = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {};
    this.requests.push({ operation, body });
    const shape = requestShapes[operation];
    if (request.method !== 'POST' || !shape) return reply(response, 404, { message: `Unknown operation ${operation}` }, 'UnknownOperationException');
    const parsed = shape.safeParse(body);
    if (!parsed.success) return reply(response, 400, { message: parsed.error.message }, 'ValidationException');
    try {
      reply(response, 200, await this.run(operation, parsed.data as any));
    } catch (error) {
      if (error instanceof VectorIndexNotFoundError) return reply(response, 404, { message: error.message }, 'NotFoundException');
      if (error instanceof VectorStoreLimitError) return reply(response, 400, { message: error.message }, 'ValidationException');
      reply(response, 500, { message: String(error) }, 'InternalServerException');
    }
  }

  private async run(operation: Operation, input: any): Promise<unknown> {
    switch (operation) {
      case 'CreateIndex':
        await this.store.createIndex({ name: input.indexName, dimension: input.dimension, nonFilterableMetadataKeys: input.metadataConfiguration?.nonFilterableMetadataKeys ?? [] });
        return {};
      case 'DeleteIndex':
        await this.store.deleteIndex(input.indexName);
        return {};
      case 'PutVectors':
        await this.store.putVectors(input.indexName, input.vectors.map((vector: any) => ({ key: vector.key, data: vector.data.float32, metadata: vector.metadata ?? {} })));
        return {};
      case 'DeleteVectors':
        await this.store.deleteVectors(input.indexName, input.keys);
        return {};
      case 'QueryVectors': {
        const matches = await this.store.queryVectors(input.indexName, { vector: input.queryVector.float32, topK: input.topK, filter: input.filter });
        return {
          vectors: matches.map((match) => ({ key: match.key, ...(input.returnDistance ? { distance: match.distance } : {}), ...(input.returnMetadata ? { metadata: match.metadata } : {}) })),
          distanceMetric: 'cosine',
        };
      }
      case 'ListVectors': {
        const all: { key: string; metadata: unknown }[] = [];
        for await (const vector of this.store.listVectors(input.indexName)) all.push(vector);
        const start = Number(input.nextToken ?? 0);
        const end = start + (input.maxResults ?? 500);
        return {
          vectors: all.slice(start, end).map((vector) => ({ key: vector.key, ...(input.returnMetadata ? { metadata: vector.metadata } : {}) })),
          ...(end < all.length ? { nextToken: String(end) } : {}),
        };
      }
    }
  }
}

function reply(response: ServerResponse, status: number, body: unknown, errorType?: string): void {
  response.writeHead(status, { 'content-type': 'application/json', ...(errorType ? { 'x-amzn-errortype': errorType } : {}) });
  response.end(JSON.stringify(body));
}
