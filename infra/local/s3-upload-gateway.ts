import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { uploadEventRule } from '../../functions/consumers.ts';
import { localUploadCredentials } from '../../shared/knowledge/document-uploads.ts';
import { logger } from '../../shared/logger.ts';
import { queueMessageBody } from '../../shared/queue/queue-message.ts';
import { maxDocumentFileBytes } from '../../shared/schemas/knowledge.ts';
import { denyEgressTo } from './environment.ts';
import { localAccountId, type LocalQueues } from './queues.ts';
import { refusalOfPost, type PostRefusal } from './s3-post-policy.ts';

/** The local uploads bucket, in fauxqs's S3. */
export const localUploadBucket = 'knowledge-uploads';

/** Bodies larger than this are refused before they are read whole (the policy's range is the real limit). */
const maxPostBytes = maxDocumentFileBytes + 1024 * 1024;

export interface LocalUploads {
  endpoint: string;
  stop(): Promise<void>;
}

/**
 * S3's browser-form POST for `npm start`. fauxqs stores POSTed objects without checking their policy or signature,
 * and sends no event notifications; this gateway answers the presigned POST URLs instead: it checks the form as S3
 * does (`s3-post-policy.ts`), stores the object in fauxqs's S3, answers as S3 does (204, or 201 with a PostResponse
 * when asked), and delivers S3's Object Created event, as EventBridge would, to the queue of the uploads rule.
 * Sets KNOWLEDGE_UPLOAD_BUCKET, S3_ENDPOINT (fauxqs) and S3_UPLOAD_ENDPOINT (itself) for the handlers.
 */
export async function startLocalUploads(queues: Pick<LocalQueues, 'endpoint' | 'region' | 'clientConfig' | 'urlOf'>, env: NodeJS.ProcessEnv = process.env): Promise<LocalUploads> {
  const s3 = new S3Client({ endpoint: queues.endpoint, forcePathStyle: true, region: queues.region, credentials: localUploadCredentials });
  const sqs = new SQSClient(queues.clientConfig);
  await s3.send(new CreateBucketCommand({ Bucket: localUploadBucket }));
  const targetQueueUrl = queues.urlOf(uploadEventRule.target.name);

  const server: Server = createServer((request, response) => {
    const answerError = (refusal: PostRefusal) =>
      response
        .writeHead(refusal.status, { 'content-type': 'application/xml' })
        .end(`<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${refusal.code}</Code><Message>${escapeXml(refusal.message)}</Message><RequestId>${randomUUID()}</RequestId></Error>`);
    const bucket = /^\/([^/?]+)\/?(\?.*)?$/.exec(request.url ?? '')?.[1];
    if (request.method !== 'POST' || !bucket || !/multipart\/form-data/i.test(request.headers['content-type'] ?? '')) {
      return answerError({ status: 405, code: 'MethodNotAllowed', message: 'This local gateway takes browser-form POST uploads only.' });
    }
    void (async () => {
      const body = await readBody(request, maxPostBytes);
      if (!body) return answerError({ status: 400, code: 'EntityTooLarge', message: 'Your proposed upload exceeds the maximum allowed size' });
      let form: FormData;
      try {
        form = await new Request('http://upload.local/', { method: 'POST', headers: { 'content-type': request.headers['content-type']! }, body }).formData();
      } catch {
        return answerError({ status: 400, code: 'MalformedPOSTRequest', message: 'The body of your POST request is not well-formed multipart/form-data.' });
      }
      const file = form.get('file');
      if (!(file instanceof Blob)) return answerError({ status: 400, code: 'InvalidArgument', message: 'POST requires exactly one file upload per request.' });
      const fields: Record<string, string> = {};
      for (const [name, value] of form.entries()) if (name !== 'file' && typeof value === 'string') fields[name] = value;
      const refusal = refusalOfPost({ bucket, fields, fileBytes: file.size, now: new Date(), secretOf: (id) => (id === localUploadCredentials.accessKeyId ? localUploadCredentials.secretAccessKey : undefined) });
      if (refusal) return answerError(refusal);
      const key = Object.entries(fields).find(([name]) => name.toLowerCase() === 'key')![1];
      const contentType = Object.entries(fields).find(([name]) => name.toLowerCase() === 'content-type')?.[1] ?? 'binary/octet-stream';
      const stored = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: new Uint8Array(await file.arrayBuffer()), ContentType: contentType }));
      if (bucket === localUploadBucket && key.startsWith(uploadEventRule.keyPrefix)) {
        const event = objectCreatedEvent({ bucket, key, size: file.size, etag: stored.ETag ?? '', region: queues.region, sourceIp: request.socket.remoteAddress ?? '127.0.0.1' });
        await sqs.send(new SendMessageCommand({ QueueUrl: targetQueueUrl, MessageBody: queueMessageBody(event) }));
      }
      const status = Object.entries(fields).find(([name]) => name.toLowerCase() === 'success_action_status')?.[1];
      if (status === '201') {
        response
          .writeHead(201, { 'content-type': 'application/xml', etag: stored.ETag ?? '' })
          .end(`<?xml version="1.0" encoding="UTF-8"?>\n<PostResponse><Bucket>${escapeXml(bucket)}</Bucket><Key>${escapeXml(key)}</Key><ETag>${escapeXml(stored.ETag ?? '')}</ETag></PostResponse>`);
      } else {
        response.writeHead(status === '200' ? 200 : 204, { etag: stored.ETag ?? '' }).end();
      }
    })().catch((error: Error) => {
      logger.error('local upload gateway failed', { error });
      if (!response.headersSent) answerError({ status: 500, code: 'InternalError', message: 'We encountered an internal error. Please try again.' });
    });
  });
  await new Promise<void>((resolveListen) => server.listen(0, '127.0.0.1', resolveListen));
  const port = (server.address() as { port: number }).port;
  const endpoint = `http://127.0.0.1:${port}`;
  denyEgressTo(port, env);
  env.KNOWLEDGE_UPLOAD_BUCKET = localUploadBucket;
  env.S3_ENDPOINT ??= queues.endpoint;
  env.S3_UPLOAD_ENDPOINT = endpoint;
  return {
    endpoint,
    stop: async () => {
      server.closeAllConnections();
      await new Promise((resolveClose) => server.close(resolveClose));
      s3.destroy();
      sqs.destroy();
    },
  };
}

/** S3's Object Created event as EventBridge delivers it to an SQS target. */
function objectCreatedEvent(input: { bucket: string; key: string; size: number; etag: string; region: string; sourceIp: string }) {
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': 'Object Created',
    source: 'aws.s3',
    account: localAccountId,
    time: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
    region: input.region,
    resources: [`arn:aws:s3:::${input.bucket}`],
    detail: {
      version: '0',
      bucket: { name: input.bucket },
      object: { key: input.key, size: input.size, etag: input.etag.replaceAll('"', ''), sequencer: Date.now().toString(16).toUpperCase() },
      'request-id': randomUUID(),
      requester: localAccountId,
      'source-ip-address': input.sourceIp,
      reason: 'PostObject',
    },
  };
}

/** The whole body, or undefined past `limit` bytes (then the rest is not read). */
function readBody(request: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolveBody, rejectBody) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    request.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > limit) {
        request.destroy();
        resolveBody(undefined);
        return;
      }
      chunks.push(chunk);
    });
    request.on('end', () => resolveBody(Buffer.concat(chunks)));
    request.on('error', rejectBody);
  });
}

const escapeXml = (text: string) => text.replace(/[<>&'"]/g, (character) => `&#${character.charCodeAt(0)};`);
