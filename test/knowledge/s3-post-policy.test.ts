import { createPresignedPost } from '@aws-sdk/s3-presigned-post';
import { S3Client } from '@aws-sdk/client-s3';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { refusalOfPost } from '../../infra/local/s3-post-policy.ts';

/** A real presigned POST (the SDK's own signer), for the local gateway's check to accept or refuse. */
async function presigned(options: { expires?: number; maxBytes?: number } = {}) {
  const client = new S3Client({ region: 'eu-west-1', endpoint: 'http://127.0.0.1:1', forcePathStyle: true, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  const post = await createPresignedPost(client, {
    Bucket: 'uploads-bucket',
    Key: 'uploads/o/s/d/v1',
    Fields: { 'Content-Type': 'application/pdf' },
    Conditions: [['content-length-range', 1, options.maxBytes ?? 1000]],
    Expires: options.expires ?? 60,
  });
  client.destroy();
  return post;
}

const check = (fields: Record<string, string>, fileBytes = 10, now = new Date(), bucket = 'uploads-bucket') =>
  refusalOfPost({ bucket, fields, fileBytes, now, secretOf: (id) => (id === 'local' ? 'local' : undefined) });

describe("the local gateway's check of a presigned POST (as S3 does it)", () => {
  it('accepts the SDK-signed form as it is, with x-ignore- fields, and field names in any case', async () => {
    const { fields } = await presigned();
    expect(check(fields)).toBeUndefined();
    expect(check({ ...fields, 'x-ignore-tracking': '1' })).toBeUndefined();
    expect(check(Object.fromEntries(Object.entries(fields).map(([name, value]) => [name.toUpperCase(), value])))).toBeUndefined();
  });

  it('refuses an expired policy, a file outside content-length-range, another bucket, an unknown key id', async () => {
    const { fields } = await presigned({ expires: 60, maxBytes: 100 });
    expect(check(fields, 10, new Date(Date.now() + 61_000))).toMatchObject({ status: 403, code: 'AccessDenied', message: 'Invalid according to Policy: Policy expired.' });
    expect(check(fields, 101)).toMatchObject({ status: 400, code: 'EntityTooLarge', details: { ProposedSize: 101, MaxSizeAllowed: 100 } });
    expect(check(fields, 0)).toMatchObject({ status: 400, code: 'EntityTooSmall', details: { ProposedSize: 0, MinSizeAllowed: 1 } });
    expect(check(fields, 10, new Date(), 'another-bucket')).toMatchObject({ status: 403, code: 'AccessDenied' });
    expect(check({ ...fields, 'X-Amz-Credential': fields['X-Amz-Credential']!.replace(/^local/, 'someone') })).toMatchObject({ status: 403, code: 'InvalidAccessKeyId' });
  });

  it('refuses any change to a signed field, any field the policy does not name, and any change to the policy itself', async () => {
    const { fields } = await presigned();
    // `bucket` is the URL's: S3 checks the policy's bucket condition against it, not against a form field.
    const names = Object.keys(fields).filter((name) => name !== 'X-Amz-Signature' && name !== 'bucket');
    await fc.assert(
      fc.property(fc.constantFrom(...names), fc.string({ minLength: 1, maxLength: 20 }), (name, suffix) => {
        expect(check({ ...fields, [name]: fields[name] + suffix }), name).toBeDefined();
      }),
    );
    await fc.assert(
      fc.property(fc.stringMatching(/^[a-z][a-z0-9-]{0,15}$/), fc.string(), (name, value) => {
        fc.pre(!(name.toLowerCase() in Object.fromEntries(Object.keys(fields).map((field) => [field.toLowerCase(), 1]))) && !name.startsWith('x-ignore-') && name !== 'file');
        expect(check({ ...fields, [name]: value })).toMatchObject({ status: 403, message: `Invalid according to Policy: Extra input fields: ${name}` });
      }),
    );
  });
});
