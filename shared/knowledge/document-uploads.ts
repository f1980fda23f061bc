import { DeleteObjectCommand, GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { traceAwsClient } from '../platform/tracing.ts';
import { createPresignedPost } from '@aws-sdk/s3-presigned-post';

/** A browser-form upload: POST `fields` then the file (last) as multipart/form-data to `url`. */
export interface PresignedUpload {
  url: string;
  fields: Record<string, string>;
}

/** Where large documents are uploaded to, read from by the ingestion, and deleted once ingested. */
export interface DocumentUploads {
  /** A presigned POST for exactly this key and content type, 1 to `maxBytes` bytes, valid `expiresSeconds`. */
  presign(key: string, options: { contentType: string; maxBytes: number; expiresSeconds: number }): Promise<PresignedUpload>;
  read(key: string): Promise<Buffer>;
  delete(key: string): Promise<void>;
}

/** The object key of a document version's upload: the ids it carries route the S3 event back to the document. */
export const uploadKey = (orgId: string, storeId: string, documentId: string, version: number): string => `uploads/${orgId}/${storeId}/${documentId}/v${version}`;

export function parseUploadKey(key: string): { orgId: string; storeId: string; documentId: string; version: number } | undefined {
  const match = /^uploads\/([^/]+)\/([^/]+)\/([^/]+)\/v(\d+)$/.exec(key);
  return match ? { orgId: match[1]!, storeId: match[2]!, documentId: match[3]!, version: Number(match[4]) } : undefined;
}

/**
 * The uploads bucket in S3. Locally `endpoint` is fauxqs's S3 (objects are read and deleted there) and
 * `postEndpoint` the local runtime's upload gateway, which checks a presigned POST's policy and signature as S3 does
 * (fauxqs does not) before it stores the object and reports the Object Created event; with placeholder credentials.
 * On AWS both are the regional endpoint and the credentials the function's role.
 */
export function s3DocumentUploads(options: { bucket: string; region: string; endpoint?: string | undefined; postEndpoint?: string | undefined }): DocumentUploads {
  const local = (endpoint: string | undefined) =>
    endpoint ? { endpoint, forcePathStyle: true, credentials: { accessKeyId: localUploadCredentials.accessKeyId, secretAccessKey: localUploadCredentials.secretAccessKey } } : {};
  const client = traceAwsClient(new S3Client({ region: options.region, ...local(options.endpoint) }));
  const signer = options.postEndpoint ? new S3Client({ region: options.region, ...local(options.postEndpoint) }) : client;
  return {
    async presign(key, { contentType, maxBytes, expiresSeconds }) {
      return createPresignedPost(signer, {
        Bucket: options.bucket,
        Key: key,
        Fields: { 'Content-Type': contentType },
        Conditions: [['content-length-range', 1, maxBytes]],
        Expires: expiresSeconds,
      });
    },
    async read(key) {
      const object = await client.send(new GetObjectCommand({ Bucket: options.bucket, Key: key }));
      return Buffer.from(await object.Body!.transformToByteArray());
    },
    async delete(key) {
      await client.send(new DeleteObjectCommand({ Bucket: options.bucket, Key: key }));
    },
  };
}

/** The placeholder credentials of the local S3: the upload gateway verifies signatures made with them. */
export const localUploadCredentials = { accessKeyId: 'local', secretAccessKey: 'local' } as const;
