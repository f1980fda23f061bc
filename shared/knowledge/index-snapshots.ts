/**
 * Snapshots of a store's BM25 index, kept beside its vectors and keyed by the store's revision (`<indexName>/bm25-r<revision>.json`),
 * so that a cold process loads the index in one read instead of listing every vector and rebuilding it. On AWS an
 * S3 bucket (`KNOWLEDGE_SNAPSHOT_BUCKET`; older revisions expire by lifecycle), locally files under `DATA_DIR`
 * beside the vector index files (older revisions deleted at once).
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DeleteObjectsCommand, GetObjectCommand, ListObjectsV2Command, NoSuchKey, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';

export interface IndexSnapshots {
  /** The snapshot of that revision, or undefined when there is none. */
  load(indexName: string, revision: number): Promise<string | undefined>;
  save(indexName: string, revision: number, body: string): Promise<void>;
  /** Every snapshot of the index (its store is deleted: the snapshots hold the chunks' text). */
  deleteAll(indexName: string): Promise<void>;
}

const snapshotName = (revision: number) => `bm25-r${revision}.json`;

export class LocalSnapshotFiles implements IndexSnapshots {
  private readonly directory: string;

  constructor(directory: string) {
    this.directory = directory;
  }

  async load(indexName: string, revision: number): Promise<string | undefined> {
    try {
      return readFileSync(join(this.directory, indexName, snapshotName(revision)), 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  async save(indexName: string, revision: number, body: string): Promise<void> {
    const directory = join(this.directory, indexName);
    mkdirSync(directory, { recursive: true });
    // Written aside, then renamed: a reader in another local Lambda environment never sees half a file.
    const file = join(directory, snapshotName(revision));
    const temporary = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    writeFileSync(temporary, body);
    renameSync(temporary, file);
    for (const name of readdirSync(directory)) {
      const older = /^bm25-r(\d+)\.json$/.exec(name);
      if (older && Number(older[1]) < revision) rmSync(join(directory, name), { force: true });
    }
  }

  async deleteAll(indexName: string): Promise<void> {
    rmSync(join(this.directory, indexName), { recursive: true, force: true });
  }
}

export class S3Snapshots implements IndexSnapshots {
  private readonly client: S3Client;
  private readonly bucket: string;

  constructor(client: S3Client, bucket: string) {
    this.client = client;
    this.bucket = bucket;
  }

  async load(indexName: string, revision: number): Promise<string | undefined> {
    try {
      const object = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: `${indexName}/${snapshotName(revision)}` }));
      return await object.Body!.transformToString('utf8');
    } catch (error) {
      if (error instanceof NoSuchKey) return undefined;
      throw error;
    }
  }

  async save(indexName: string, revision: number, body: string): Promise<void> {
    await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: `${indexName}/${snapshotName(revision)}`, Body: body, ContentType: 'application/json' }));
  }

  async deleteAll(indexName: string): Promise<void> {
    let token: string | undefined;
    do {
      const page = await this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: `${indexName}/`, ContinuationToken: token }));
      const keys = (page.Contents ?? []).map((object) => ({ Key: object.Key! }));
      if (keys.length > 0) await this.client.send(new DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: keys, Quiet: true } }));
      token = page.NextContinuationToken;
    } while (token);
  }
}
