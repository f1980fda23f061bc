import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { RecordingStore } from './ports.ts';
import { traceAwsClient } from '../platform/tracing.ts';

/**
 * Call recordings in S3. Locally `endpoint` is fauxqs's (the SQS emulator also speaks S3), path-style, with
 * placeholder credentials; on AWS the regional endpoint and the function's role.
 */
export function s3Recordings(options: { bucket: string; region: string; endpoint?: string | undefined }): RecordingStore {
  const client = traceAwsClient(
    new S3Client({
      region: options.region,
      ...(options.endpoint ? { endpoint: options.endpoint, forcePathStyle: true, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
    }),
  );
  return {
    async put(key, body, contentType) {
      await client.send(new PutObjectCommand({ Bucket: options.bucket, Key: key, Body: body, ContentType: contentType }));
    },
    signedUrl: (key, expiresIn) => getSignedUrl(client, new GetObjectCommand({ Bucket: options.bucket, Key: key }), { expiresIn }),
  };
}
