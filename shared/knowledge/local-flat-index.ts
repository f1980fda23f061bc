import { closeSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  assertWritable,
  matchesFilter,
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

interface LoadedIndex {
  spec: VectorIndexSpec;
  keys: string[];
  /** Row-major, `dimension` floats per key, each row L2-normalised for the cosine. */
  rows: Float32Array;
  metadata: VectorMetadata[];
  stamp: string;
}

interface IndexFile {
  spec: VectorIndexSpec;
  vectors: { key: string; data: string; metadata: VectorMetadata }[];
}

const lockStaleMs = 30_000;

/**
 * The local runtime's vector store: an exact (flat) cosine search in TypeScript, one file per index under
 * `directory` (DATA_DIR/vectors), with S3 Vectors' limits and filter grammar. Writers take a lock file, so the
 * local Lambda environments (worker threads) can share it; readers reload an index whose file changed.
 */
export class LocalFlatVectorStore implements VectorStore {
  private readonly directory: string;
  private readonly loaded = new Map<string, LoadedIndex>();

  constructor(directory: string) {
    this.directory = directory;
    mkdirSync(directory, { recursive: true });
  }

  async createIndex(spec: VectorIndexSpec): Promise<void> {
    await this.withLock(spec.name, () => {
      if (this.exists(spec.name)) return;
      this.write({ spec, vectors: [] });
    });
  }

  async deleteIndex(indexName: string): Promise<void> {
    await this.withLock(indexName, () => rmSync(this.file(indexName), { force: true }));
    this.loaded.delete(indexName);
  }

  async putVectors(indexName: string, vectors: readonly VectorRecord[]): Promise<void> {
    await this.withLock(indexName, () => {
      const index = this.readFile(indexName);
      assertWritable(index.spec, vectors);
      const byKey = new Map(index.vectors.map((vector) => [vector.key, vector]));
      for (const vector of vectors) byKey.set(vector.key, { key: vector.key, data: encode(vector.data), metadata: vector.metadata });
      this.write({ spec: index.spec, vectors: [...byKey.values()] });
    });
  }

  async deleteVectors(indexName: string, keys: readonly string[]): Promise<void> {
    if (keys.length > vectorLimits.maxVectorsPerWrite) throw new VectorStoreLimitError(`At most ${vectorLimits.maxVectorsPerWrite} keys per delete.`);
    await this.withLock(indexName, () => {
      const index = this.readFile(indexName);
      const doomed = new Set(keys);
      this.write({ spec: index.spec, vectors: index.vectors.filter((vector) => !doomed.has(vector.key)) });
    });
  }

  async queryVectors(indexName: string, request: { vector: number[]; topK: number; filter?: VectorFilter | undefined }): Promise<VectorMatch[]> {
    if (request.topK < 1 || request.topK > vectorLimits.maxTopK) throw new VectorStoreLimitError(`topK must be 1–${vectorLimits.maxTopK}.`);
    const index = this.current(indexName);
    const { dimension } = index.spec;
    if (request.vector.length !== dimension) throw new VectorStoreLimitError(`The query has ${request.vector.length} dimensions; the index has ${dimension}.`);
    const query = normalised(request.vector);
    const best: { row: number; similarity: number }[] = [];
    for (let row = 0; row < index.keys.length; row += 1) {
      if (request.filter && !matchesFilter(index.metadata[row]!, request.filter)) continue;
      let similarity = 0;
      const offset = row * dimension;
      for (let d = 0; d < dimension; d += 1) similarity += query[d]! * index.rows[offset + d]!;
      if (best.length === request.topK && similarity <= best[best.length - 1]!.similarity) continue;
      best.splice(insertionPoint(best, similarity), 0, { row, similarity });
      if (best.length > request.topK) best.pop();
    }
    return best.map(({ row, similarity }) => ({ key: index.keys[row]!, distance: 1 - similarity, metadata: index.metadata[row]! }));
  }

  async *listVectors(indexName: string): AsyncIterable<{ key: string; metadata: VectorMetadata }> {
    const index = this.current(indexName);
    for (const [row, key] of index.keys.entries()) yield { key, metadata: index.metadata[row]! };
  }

  private file(indexName: string): string {
    if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(indexName)) throw new VectorStoreLimitError(`Invalid index name ${indexName}.`);
    return join(this.directory, `${indexName}.json`);
  }

  private exists(indexName: string): boolean {
    try {
      statSync(this.file(indexName));
      return true;
    } catch {
      return false;
    }
  }

  private readFile(indexName: string): IndexFile {
    try {
      return JSON.parse(readFileSync(this.file(indexName), 'utf8')) as IndexFile;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new VectorIndexNotFoundError(`No vector index ${indexName}.`);
      throw error;
    }
  }

  /** The index as its file is now: reloaded only when the file changed since the last read. */
  private current(indexName: string): LoadedIndex {
    let stamp: string;
    try {
      const stat = statSync(this.file(indexName));
      stamp = `${stat.mtimeMs}/${stat.size}/${stat.ino}`;
    } catch {
      this.loaded.delete(indexName);
      throw new VectorIndexNotFoundError(`No vector index ${indexName}.`);
    }
    const cached = this.loaded.get(indexName);
    if (cached?.stamp === stamp) return cached;
    const file = this.readFile(indexName);
    const { dimension } = file.spec;
    const rows = new Float32Array(file.vectors.length * dimension);
    file.vectors.forEach((vector, row) => rows.set(normalised(decode(vector.data)), row * dimension));
    const index = { spec: file.spec, keys: file.vectors.map((vector) => vector.key), rows, metadata: file.vectors.map((vector) => vector.metadata), stamp };
    this.loaded.set(indexName, index);
    return index;
  }

  private write(index: IndexFile): void {
    const target = this.file(index.spec.name);
    const temporary = `${target}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    writeFileSync(temporary, JSON.stringify(index));
    renameSync(temporary, target);
  }

  /** One writer per index across threads and processes: an exclusive lock file, taken over when stale. */
  private async withLock<T>(indexName: string, work: () => T): Promise<T> {
    const lock = `${this.file(indexName)}.lock`;
    for (let attempt = 0; ; attempt += 1) {
      try {
        closeSync(openSync(lock, 'wx'));
        break;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        try {
          if (Date.now() - statSync(lock).mtimeMs > lockStaleMs) rmSync(lock, { force: true });
        } catch {
          // Released meanwhile: try again.
        }
        await sleep(Math.min(50, 2 + attempt));
      }
    }
    try {
      return work();
    } finally {
      rmSync(lock, { force: true });
    }
  }
}

function insertionPoint(best: readonly { similarity: number }[], similarity: number): number {
  let low = 0;
  let high = best.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (best[middle]!.similarity >= similarity) low = middle + 1;
    else high = middle;
  }
  return low;
}

function normalised(vector: ArrayLike<number>): Float32Array {
  let sum = 0;
  for (let index = 0; index < vector.length; index += 1) sum += vector[index]! * vector[index]!;
  const norm = Math.sqrt(sum) || 1;
  return Float32Array.from(vector, (value) => value / norm);
}

const encode = (data: number[]): string => Buffer.from(Float32Array.from(data).buffer).toString('base64');

function decode(data: string): Float32Array {
  const bytes = Buffer.from(data, 'base64');
  return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
}
