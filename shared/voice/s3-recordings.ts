import type { RecordingStore } from './ports.ts';
import { traceAwsClient } from '../platform/tracing.ts';

/**
 * Call recordings in S3. Locally `endpoint` is fauxqs's (the SQS emulator also speaks S3), path-style, with
 * placeholder credentials; on AWS the regional endpoint and the function's role. The S3 client and the presigner
 * are imported with the first recording, not at init: most invocations of the functions that bundle this touch none.
 */
export function s3Recordings(options: { bucket: string; region: string; endpoint?: string | undefined }): RecordingStore {
  let loading: ReturnType<typeof load> | undefined;
  const load = async () => {
    const [{ GetObjectCommand, PutObjectCommand, S3Client }, { getSignedUrl }] = await Promise.all([import('@aws-sdk/client-s3'), import('@aws-sdk/s3-request-presigner')]);
    const client = traceAwsClient(
      new S3Client({
        region: options.region,
        ...(options.endpoint ? { endpoint: options.endpoint, forcePathStyle: true, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
      }),
    );
    return { client, GetObjectCommand, PutObjectCommand, getSignedUrl };
  };
  const s3 = () => (loading ??= load());
  return {
    async put(key, body, contentType) {
      const { client, PutObjectCommand } = await s3();
      await client.send(new PutObjectCommand({ Bucket: options.bucket, Key: key, Body: body, ContentType: contentType }));
    },
    async signedUrl(key, expiresIn) {
      const { client, GetObjectCommand, getSignedUrl } = await s3();
      return getSignedUrl(client, new GetObjectCommand({ Bucket: options.bucket, Key: key }), { expiresIn });
    },
  };
}
