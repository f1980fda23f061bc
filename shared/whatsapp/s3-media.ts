import { traceAwsClient } from '../platform/tracing.ts';
import type { WhatsappMediaStore } from './media-store.ts';

/**
 * The media bucket in S3. Locally `endpoint` is fauxqs's (the SQS emulator also speaks S3), path-style, with
 * placeholder credentials; on AWS the regional endpoint and the function's role. The S3 client and the presigner
 * are imported with the first media, not at init: most invocations of the functions that bundle this touch none.
 */
export function s3WhatsappMedia(options: { bucket: string | undefined; region: string; endpoint?: string | undefined }): WhatsappMediaStore {
  const { bucket } = options;
  if (!bucket) {
    const missing = () => Promise.reject(new Error('WHATSAPP_MEDIA_BUCKET is not set: WhatsApp media have nowhere to go.'));
    return { put: missing, exists: missing, signedUrl: missing };
  }
  let loading: ReturnType<typeof load> | undefined;
  const load = async () => {
    const [s3Module, { getSignedUrl }] = await Promise.all([import('@aws-sdk/client-s3'), import('@aws-sdk/s3-request-presigner')]);
    const client = traceAwsClient(
      new s3Module.S3Client({
        region: options.region,
        ...(options.endpoint ? { endpoint: options.endpoint, forcePathStyle: true, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
      }),
    );
    return { client, s3Module, getSignedUrl };
  };
  const s3 = () => (loading ??= load());
  return {
    async put(key, body, contentType) {
      const { client, s3Module } = await s3();
      await client.send(new s3Module.PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentType: contentType }));
    },
    async exists(key) {
      const { client, s3Module } = await s3();
      try {
        await client.send(new s3Module.HeadObjectCommand({ Bucket: bucket, Key: key }));
        return true;
      } catch (error) {
        if (error instanceof s3Module.NotFound || (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404) return false;
        throw error;
      }
    },
    async signedUrl(key, expiresIn) {
      const { client, s3Module, getSignedUrl } = await s3();
      return getSignedUrl(client, new s3Module.GetObjectCommand({ Bucket: bucket, Key: key }), { expiresIn });
    },
  };
}
