import type { UploadDeps } from './knowledge.ts';
import { s3DocumentUploads } from './document-uploads.ts';
import { knowledgeRuntime, type KnowledgeRuntime } from './knowledge-runtime.ts';

let processRuntime: (KnowledgeRuntime & UploadDeps) | undefined;

/**
 * The knowledge runtime plus the uploads bucket, for the functions that presign, read or delete uploads (the
 * knowledge API and the ingestion). Apart from `knowledgeRuntime` so that the S3 client stays out of the bundles of
 * the functions that only retrieve (every turn of an agent with a store).
 */
export function knowledgeUploadsRuntime(): KnowledgeRuntime & UploadDeps {
  if (!processRuntime) {
    const base = knowledgeRuntime();
    const { KNOWLEDGE_UPLOAD_BUCKET: bucket, AWS_REGION: region, S3_ENDPOINT: endpoint, S3_UPLOAD_ENDPOINT: postEndpoint } = base.config;
    let uploads: UploadDeps['uploads'] | undefined;
    // The base's own properties stay as they are (its vector store is built on first use).
    processRuntime = Object.create(base, {
      uploads: {
        get() {
          if (!bucket) throw new Error('KNOWLEDGE_UPLOAD_BUCKET is not set: this deployment takes no document uploads.');
          uploads ??= s3DocumentUploads({ bucket, region, endpoint, postEndpoint });
          return uploads;
        },
      },
    }) as KnowledgeRuntime & UploadDeps;
  }
  return processRuntime;
}
