import { GetObjectCommand, HeadObjectCommand, NotFound, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { traceAwsClient } from '../platform/tracing.ts';
import type { WhatsappMediaStore } from './media-store.ts';

/**
 * The media bucket in S3. Locally `endpoint` is fauxqs's (the SQS emulator also speaks S3), path-style, with
 * placeholder credentials; on AWS the regional endpoint and the function's role.
 */
export function s3WhatsappMedia(options: { bucket: string | undefined; region: string; endpoint?: string | undefined }): WhatsappMediaStore {
  const { bucket } = options;
  if (!bucket) {
    const missing = () => Promise.reject(new Error('WHATSAPP_MEDIA_BUCKET is not set: WhatsApp media have nowhere to go.'));
    return { put: missing, exists: missing, signedUrl: missing };
  }
  const client = traceAwsClient(
    new S3Client({
      region: options.region,
      ...(options.endpoint ? { endpoint: options.endpoint, forcePathStyle: true, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
    }),
  );
  return {
    async put(key, body, contentType) {
      await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentType: contentType }));
    },
    async exists(key) {
      try {
        await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
        return true;
      } catch (error) {
        if (error instanceof NotFound || (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404) return false;
        throw error;
      }
    },
    signedUrl: (key, expiresIn) => getSignedUrl(client, new GetObjectCommand({ Bucket: bucket, Key: key }), { expiresIn }),
  };
}
