import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { uploadEventRule } from '../../functions/consumers.ts';
import { localUploadCredentials } from '../../shared/knowledge/document-uploads.ts';
import { logger } from '../../shared/platform/logger.ts';
import { queueMessageBody } from '../../shared/platform/queue/queue-message.ts';
import { maxDocumentFileBytes } from '../../shared/knowledge/knowledge-schemas.ts';
import { denyEgressTo } from './environment.ts';
import { localAccountId, type LocalQueues } from './queues.ts';
import { entityTooLarge, refusalOfPost, type PostRefusal } from './s3-post-policy.ts';

/** The local uploads bucket, in fauxqs's S3. */
export const localUploadBucket = 'knowledge-uploads';

/** Bodies are kept up to this size; past it the rest is read and counted, not kept (the policy's range is the real limit). */
const maxKeptPostBytes = maxDocumentFileBytes + 1024 * 1024;

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
    const answerError = (refusal: PostRefusal) => {
      const details = Object.entries(refusal.details ?? {}).map(([name, value]) => `<${name}>${escapeXml(String(value))}</${name}>`).join('');
      response
        .writeHead(refusal.status, { 'content-type': 'application/xml' })
        .end(`<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${refusal.code}</Code><Message>${escapeXml(refusal.message)}</Message>${details}<RequestId>${randomUUID()}</RequestId></Error>`);
    };
    const bucket = /^\/([^/?]+)\/?(\?.*)?$/.exec(request.url ?? '')?.[1];
    const formType = request.headers['content-type'] ?? '';
    if (request.method !== 'POST' || !bucket || !/multipart\/form-data/i.test(formType)) {
      return answerError({ status: 405, code: 'MethodNotAllowed', message: 'This local gateway takes browser-form POST uploads only.' });
    }
    const malformed: PostRefusal = { status: 400, code: 'MalformedPOSTRequest', message: 'The body of your POST request is not well-formed multipart/form-data.' };
    const refusalOf = (fields: Record<string, string>, fileBytes: number) =>
      refusalOfPost({ bucket, fields, fileBytes, now: new Date(), secretOf: (id) => (id === localUploadCredentials.accessKeyId ? localUploadCredentials.secretAccessKey : undefined) });
    void (async () => {
      const body = await readBody(request, maxKeptPostBytes);
      if (body.totalBytes > body.head.length) {
        // Too large to keep: judged from the fields before the file and the file's size, as S3 judges it.
        const oversized = await oversizedForm(body, boundaryOf(formType));
        if (oversized === 'fields too large') return answerError({ status: 400, code: 'MaxPostPreDataLengthExceeded', message: 'Your POST request fields preceding the upload file were too large.' });
        if (!oversized) return answerError(malformed);
        return answerError(refusalOf(oversized.fields, oversized.fileBytes) ?? entityTooLarge(oversized.fileBytes, maxDocumentFileBytes));
      }
      let form: FormData;
      try {
        form = await new Request('http://upload.local/', { method: 'POST', headers: { 'content-type': formType }, body: body.head }).formData();
      } catch {
        return answerError(malformed);
      }
      const file = form.get('file');
      if (!(file instanceof Blob)) return answerError({ status: 400, code: 'InvalidArgument', message: 'POST requires exactly one file upload per request.' });
      const fields = stringFields(form);
      const refusal = refusalOf(fields, file.size);
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

/** Enough of the end of a body to hold its closing delimiter (a boundary is at most 70 characters, RFC 2046). */
const tailBytes = 256;

interface ReadBody {
  /** The first bytes of the body, all of it unless `totalBytes` is larger. */
  head: Buffer;
  /** Its last bytes. */
  tail: Buffer;
  totalBytes: number;
}

/**
 * The body, kept up to `limit` bytes; the rest is still read, counted and dropped. A client sends its whole body
 * before it reads the answer, so a body cut short would leave it with a reset connection instead of S3's error.
 */
function readBody(request: IncomingMessage, limit: number): Promise<ReadBody> {
  return new Promise((resolveBody, rejectBody) => {
    const kept: Buffer[] = [];
    let keptBytes = 0;
    let totalBytes = 0;
    let tail: Buffer = Buffer.alloc(0);
    request.on('data', (chunk: Buffer) => {
      totalBytes += chunk.length;
      if (keptBytes < limit) {
        const part = chunk.subarray(0, limit - keptBytes);
        kept.push(part);
        keptBytes += part.length;
      }
      tail = chunk.length >= tailBytes ? chunk.subarray(-tailBytes) : Buffer.concat([tail, chunk]).subarray(-tailBytes);
    });
    request.on('end', () => resolveBody({ head: Buffer.concat(kept, keptBytes), tail, totalBytes }));
    request.on('error', rejectBody);
  });
}

const boundaryOf = (contentType: string | undefined): string | undefined => {
  const match = /;\s*boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType ?? '');
  return match?.[1] ?? match?.[2];
};

/** The form's fields but the file, names as sent. */
function stringFields(form: FormData): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const [name, value] of form.entries()) if (name !== 'file' && typeof value === 'string') fields[name] = value;
  return fields;
}

/**
 * The fields and the file's size of a multipart body only the head of which was kept. S3 takes the fields before the
 * file (and ignores any after it), so they are in the head; the file runs from the end of its part's headers to the
 * closing delimiter at the end of the body. `fields too large` when the head holds no file part; undefined when the
 * body is not a multipart form.
 */
async function oversizedForm(body: ReadBody, boundary: string | undefined): Promise<{ fields: Record<string, string>; fileBytes: number } | 'fields too large' | undefined> {
  if (!boundary) return undefined;
  const delimiter = Buffer.from(`--${boundary}`);
  for (let partStart = body.head.indexOf(delimiter); partStart !== -1; ) {
    const headersEnd = body.head.indexOf('\r\n\r\n', partStart);
    if (headersEnd === -1) return 'fields too large';
    const headers = body.head.toString('latin1', partStart + delimiter.length, headersEnd);
    if (/^content-disposition:[^\r\n]*;\s*name="file"/im.test(headers)) {
      const closing = body.tail.lastIndexOf(`\r\n--${boundary}--`);
      if (closing === -1) return undefined;
      const fileBytes = body.totalBytes - body.tail.length + closing - (headersEnd + 4);
      if (partStart === 0) return { fields: {}, fileBytes };
      const fieldsOnly = Buffer.concat([body.head.subarray(0, partStart), Buffer.from(`--${boundary}--\r\n`)]);
      try {
        const form = await new Request('http://upload.local/', { method: 'POST', headers: { 'content-type': `multipart/form-data; boundary=${boundary}` }, body: fieldsOnly }).formData();
        return { fields: stringFields(form), fileBytes };
      } catch {
        return undefined;
      }
    }
    partStart = body.head.indexOf(delimiter, headersEnd);
  }
  return 'fields too large';
}

const escapeXml = (text: string) => text.replace(/[<>&'"]/g, (character) => `&#${character.charCodeAt(0)};`);
