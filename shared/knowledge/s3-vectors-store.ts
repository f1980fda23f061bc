import {
  CreateIndexCommand,
  DeleteIndexCommand,
  DeleteVectorsCommand,
  ListVectorsCommand,
  NotFoundException,
  ConflictException,
  ValidationException,
  PutVectorsCommand,
  QueryVectorsCommand,
  type PutInputVector,
  type QueryVectorsInput,
  type S3VectorsClient,
} from '@aws-sdk/client-s3vectors';
import {
  assertWritable,
  VectorIndexNotFoundError,
  vectorLimits,
  VectorStoreLimitError,
  type VectorFilter,
  type VectorIndexSpec,
  type VectorMatch,
  type VectorMetadata,
  type VectorRecord,
  type VectorStore,
} from './vector-store.ts';

/**
 * Amazon S3 Vectors: one index per knowledge store in the platform's vector bucket, cosine distance, float32.
 * Limits are checked before sending (the same checks as the local index), so both refuse the same writes.
 */
export class S3VectorsStore implements VectorStore {
  private readonly client: S3VectorsClient;
  private readonly bucket: string;
  /** Dimensions by index, for the write checks; learned at creation or from the first write's data. */
  private readonly specs = new Map<string, VectorIndexSpec>();

  constructor(client: S3VectorsClient, vectorBucketName: string) {
    this.client = client;
    this.bucket = vectorBucketName;
  }

  async createIndex(spec: VectorIndexSpec): Promise<void> {
    this.specs.set(spec.name, spec);
    try {
      await this.client.send(
        new CreateIndexCommand({
          vectorBucketName: this.bucket,
          indexName: spec.name,
          dataType: 'float32',
          dimension: spec.dimension,
          distanceMetric: 'cosine',
          metadataConfiguration: { nonFilterableMetadataKeys: spec.nonFilterableMetadataKeys },
        }),
      );
    } catch (error) {
      if (!(error instanceof ConflictException)) throw error;
    }
  }

  async deleteIndex(indexName: string): Promise<void> {
    try {
      await this.client.send(new DeleteIndexCommand({ vectorBucketName: this.bucket, indexName }));
    } catch (error) {
      if (!(error instanceof NotFoundException)) throw error;
    }
  }

  async putVectors(indexName: string, vectors: readonly VectorRecord[]): Promise<void> {
    const spec = this.specs.get(indexName) ?? { name: indexName, dimension: vectors[0]?.data.length ?? 0, nonFilterableMetadataKeys: [] };
    assertWritable(spec, vectors);
    await this.translate(() =>
      this.client.send(
        new PutVectorsCommand({
          vectorBucketName: this.bucket,
          indexName,
          vectors: vectors.map((vector) => ({ key: vector.key, data: { float32: vector.data }, metadata: vector.metadata as PutInputVector['metadata'] })),
        }),
      ),
    );
  }

  async deleteVectors(indexName: string, keys: readonly string[]): Promise<void> {
    if (keys.length > vectorLimits.maxVectorsPerWrite) throw new VectorStoreLimitError(`At most ${vectorLimits.maxVectorsPerWrite} keys per delete.`);
    await this.translate(() => this.client.send(new DeleteVectorsCommand({ vectorBucketName: this.bucket, indexName, keys: [...keys] })));
  }

  async queryVectors(indexName: string, request: { vector: number[]; topK: number; filter?: VectorFilter | undefined }): Promise<VectorMatch[]> {
    if (request.topK < 1 || request.topK > vectorLimits.maxTopK) throw new VectorStoreLimitError(`topK must be 1–${vectorLimits.maxTopK}.`);
    const result = await this.translate(() =>
      this.client.send(
        new QueryVectorsCommand({
          vectorBucketName: this.bucket,
          indexName,
          topK: request.topK,
          queryVector: { float32: request.vector },
          ...(request.filter ? { filter: request.filter as QueryVectorsInput['filter'] } : {}),
          returnMetadata: true,
          returnDistance: true,
        }),
      ),
    );
    return (result.vectors ?? []).map((vector) => ({ key: vector.key ?? '', distance: vector.distance ?? 1, metadata: (vector.metadata ?? {}) as VectorMetadata }));
  }

  async *listVectors(indexName: string): AsyncIterable<{ key: string; metadata: VectorMetadata }> {
    let nextToken: string | undefined;
    do {
      const page = await this.translate(() =>
        this.client.send(new ListVectorsCommand({ vectorBucketName: this.bucket, indexName, maxResults: 1000, returnMetadata: true, nextToken })),
      );
      for (const vector of page.vectors ?? []) yield { key: vector.key ?? '', metadata: (vector.metadata ?? {}) as VectorMetadata };
      nextToken = page.nextToken;
    } while (nextToken);
  }

  private async translate<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      if (error instanceof NotFoundException) throw new VectorIndexNotFoundError(error.message, { cause: error });
      if (error instanceof ValidationException) throw new VectorStoreLimitError(error.message, { cause: error });
      throw error;
    }
  }
}
