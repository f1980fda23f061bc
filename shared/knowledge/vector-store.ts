/**
 * The vector-store port, shaped after Amazon S3 Vectors (one index per knowledge store; docs/knowledge.md):
 * the S3 Vectors adapter runs on AWS, the local flat index (same limits, same filter grammar) on this machine.
 */
export type MetadataValue = string | number | boolean | string[];
export type VectorMetadata = Record<string, MetadataValue>;

export interface VectorRecord {
  key: string;
  data: number[];
  metadata: VectorMetadata;
}

export interface VectorMatch {
  key: string;
  /** Cosine distance, 1 − cosine similarity, as S3 Vectors reports it. */
  distance: number;
  metadata: VectorMetadata;
}

/**
 * S3 Vectors' filter grammar: `{field: value}` (equality), `{field: {$eq|$ne|$gt|$gte|$lt|$lte|$in|$nin|$exists}}`,
 * `{$and: [...]}`, `{$or: [...]}`.
 */
export type VectorFilter = Record<string, unknown>;

/** S3 Vectors' limits, which the local index enforces too. */
export const vectorLimits = {
  maxTopK: 100,
  maxVectorsPerWrite: 500,
  maxFilterableMetadataBytes: 2048,
  maxMetadataBytes: 40 * 1024,
  maxKeyLength: 1024,
} as const;

export interface VectorIndexSpec {
  name: string;
  dimension: number;
  /** Metadata keys kept with a vector but not usable in filters (not counted in the 2 KB). */
  nonFilterableMetadataKeys: string[];
}

export interface VectorStore {
  /** Creates the index; an existing one of that name is left as it is. */
  createIndex(spec: VectorIndexSpec): Promise<void>;
  /** Deletes the index and every vector in it; a missing index is not an error. */
  deleteIndex(indexName: string): Promise<void>;
  /** Writes up to 500 vectors; a key that exists is overwritten. */
  putVectors(indexName: string, vectors: readonly VectorRecord[]): Promise<void>;
  /** Deletes up to 500 vectors by key; missing keys are ignored. */
  deleteVectors(indexName: string, keys: readonly string[]): Promise<void>;
  queryVectors(indexName: string, request: { vector: number[]; topK: number; filter?: VectorFilter | undefined }): Promise<VectorMatch[]>;
  /** Every vector's key and metadata (no data), page after page. */
  listVectors(indexName: string): AsyncIterable<{ key: string; metadata: VectorMetadata }>;
}

export class VectorStoreLimitError extends Error {
  override readonly name = 'VectorStoreLimitError';
}

export class VectorIndexNotFoundError extends Error {
  override readonly name = 'VectorIndexNotFoundError';
}

/** Whether `metadata` satisfies `filter`, in S3 Vectors' grammar. */
export function matchesFilter(metadata: VectorMetadata, filter: VectorFilter): boolean {
  return Object.entries(filter).every(([field, condition]) => {
    if (field === '$and') return (condition as VectorFilter[]).every((part) => matchesFilter(metadata, part));
    if (field === '$or') return (condition as VectorFilter[]).some((part) => matchesFilter(metadata, part));
    if (field.startsWith('$')) throw new VectorStoreLimitError(`Unsupported filter operator ${field}`);
    const value = metadata[field];
    if (condition === null || typeof condition !== 'object' || Array.isArray(condition)) return equals(value, condition);
    return Object.entries(condition as Record<string, unknown>).every(([operator, operand]) => compare(value, operator, operand));
  });
}

function equals(value: MetadataValue | undefined, operand: unknown): boolean {
  // An array of strings matches a value it contains, as in S3 Vectors.
  if (Array.isArray(value)) return value.includes(operand as string);
  return value === operand;
}

function compare(value: MetadataValue | undefined, operator: string, operand: unknown): boolean {
  switch (operator) {
    case '$eq':
      return equals(value, operand);
    case '$ne':
      return value !== undefined && !equals(value, operand);
    case '$gt':
      return typeof value === 'number' && value > (operand as number);
    case '$gte':
      return typeof value === 'number' && value >= (operand as number);
    case '$lt':
      return typeof value === 'number' && value < (operand as number);
    case '$lte':
      return typeof value === 'number' && value <= (operand as number);
    case '$in':
      return (operand as unknown[]).some((item) => equals(value, item));
    case '$nin':
      return value !== undefined && !(operand as unknown[]).some((item) => equals(value, item));
    case '$exists':
      return (value !== undefined) === operand;
    default:
      throw new VectorStoreLimitError(`Unsupported filter operator ${operator}`);
  }
}

/** Checks a write against S3 Vectors' limits, so that the local index refuses what AWS would. */
export function assertWritable(spec: VectorIndexSpec, vectors: readonly VectorRecord[]): void {
  if (vectors.length > vectorLimits.maxVectorsPerWrite) throw new VectorStoreLimitError(`At most ${vectorLimits.maxVectorsPerWrite} vectors per write, got ${vectors.length}.`);
  for (const vector of vectors) {
    if (!vector.key || vector.key.length > vectorLimits.maxKeyLength) throw new VectorStoreLimitError(`Vector key must be 1–${vectorLimits.maxKeyLength} characters.`);
    if (vector.data.length !== spec.dimension) throw new VectorStoreLimitError(`Vector ${vector.key} has ${vector.data.length} dimensions; the index has ${spec.dimension}.`);
    const filterable = Object.fromEntries(Object.entries(vector.metadata).filter(([key]) => !spec.nonFilterableMetadataKeys.includes(key)));
    if (Buffer.byteLength(JSON.stringify(filterable)) > vectorLimits.maxFilterableMetadataBytes) {
      throw new VectorStoreLimitError(`Vector ${vector.key} has more than ${vectorLimits.maxFilterableMetadataBytes} bytes of filterable metadata.`);
    }
    if (Buffer.byteLength(JSON.stringify(vector.metadata)) > vectorLimits.maxMetadataBytes) {
      throw new VectorStoreLimitError(`Vector ${vector.key} has more than ${vectorLimits.maxMetadataBytes} bytes of metadata.`);
    }
  }
}
