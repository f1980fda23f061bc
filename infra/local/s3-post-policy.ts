import { createHmac, timingSafeEqual } from 'node:crypto';

/** What S3 answers a POST it refuses: status, error code and message, as S3 words them. */
export interface PostRefusal {
  status: number;
  code: string;
  message: string;
  /** The elements S3 adds after `Message` for some codes, in its order (e.g. `ProposedSize`, `MaxSizeAllowed`). */
  details?: Readonly<Record<string, string | number>>;
}

const refuse = (status: number, code: string, message: string, details?: PostRefusal['details']): PostRefusal => ({ status, code, message, ...(details ? { details } : {}) });

/** S3's answer to a file larger than the POST allows. */
export const entityTooLarge = (proposedSize: number, maxSizeAllowed: number): PostRefusal =>
  refuse(400, 'EntityTooLarge', 'Your proposed upload exceeds the maximum allowed size', { ProposedSize: proposedSize, MaxSizeAllowed: maxSizeAllowed });
const policyFailure = (detail: string) => refuse(403, 'AccessDenied', `Invalid according to Policy: ${detail}`);

/** Form fields the policy need not name (S3's rule); the file is the body, not a field. */
const unconditionedFields = new Set(['policy', 'x-amz-signature', 'file']);

const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data, 'utf8').digest();

/** SigV4's signing key for S3 on that day and region. */
function signingKey(secretAccessKey: string, day: string, region: string): Buffer {
  return hmac(hmac(hmac(hmac(`AWS4${secretAccessKey}`, day), region), 's3'), 'aws4_request');
}

/**
 * Checks a browser-form POST the way S3 does (docs: "Browser-based uploads using POST", "Creating a POST policy"):
 * the SigV4 signature of the base64 policy with the secret of the credential's access key, the policy's expiration,
 * every condition (exact match, `eq`, `starts-with`, `content-length-range`), and no field the policy does not
 * name (`x-ignore-*` aside). Field names are case-insensitive; `bucket` is the URL's. Undefined when it is accepted.
 */
export function refusalOfPost(input: {
  bucket: string;
  /** The form fields but the file, names as sent. */
  fields: Record<string, string>;
  fileBytes: number;
  now: Date;
  secretOf(accessKeyId: string): string | undefined;
}): PostRefusal | undefined {
  const fields = new Map(Object.entries(input.fields).map(([name, value]) => [name.toLowerCase(), value]));
  const policy = fields.get('policy');
  const signature = fields.get('x-amz-signature');
  if (!policy || !signature) return refuse(403, 'AccessDenied', 'Access Denied');
  if (fields.get('x-amz-algorithm') !== 'AWS4-HMAC-SHA256') return refuse(400, 'InvalidArgument', 'Only AWS4-HMAC-SHA256 is supported for x-amz-algorithm.');
  const [accessKeyId, day, region, service, terminator] = (fields.get('x-amz-credential') ?? '').split('/');
  const secret = accessKeyId ? input.secretOf(accessKeyId) : undefined;
  if (!secret) return refuse(403, 'InvalidAccessKeyId', 'The AWS Access Key Id you provided does not exist in our records.');
  if (!day || !region || service !== 's3' || terminator !== 'aws4_request' || !fields.get('x-amz-date')?.startsWith(day)) {
    return refuse(400, 'AuthorizationQueryParametersError', 'Error parsing the X-Amz-Credential parameter.');
  }
  const expected = hmac(signingKey(secret, day, region), policy);
  const given = Buffer.from(signature, 'hex');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return refuse(403, 'SignatureDoesNotMatch', 'The request signature we calculated does not match the signature you provided. Check your key and signing method.');
  }

  let document: { expiration?: unknown; conditions?: unknown };
  try {
    document = JSON.parse(Buffer.from(policy, 'base64').toString('utf8')) as typeof document;
  } catch {
    return refuse(400, 'InvalidPolicyDocument', 'Invalid Policy: Invalid JSON.');
  }
  if (typeof document.expiration !== 'string' || Number.isNaN(Date.parse(document.expiration)) || !Array.isArray(document.conditions)) {
    return refuse(400, 'InvalidPolicyDocument', 'Invalid Policy: Policy missing expiration or conditions.');
  }
  if (Date.parse(document.expiration) <= input.now.getTime()) return policyFailure('Policy expired.');

  const valueOf = (name: string) => (name === 'bucket' ? input.bucket : fields.get(name));
  const named = new Set<string>();
  let sizeRange: [number, number] | undefined;
  for (const condition of document.conditions as unknown[]) {
    const failed = () => policyFailure(`Policy Condition failed: ${JSON.stringify(condition)}`);
    if (Array.isArray(condition)) {
      const [operator, subject, value] = condition as [unknown, unknown, unknown];
      if (String(operator).toLowerCase() === 'content-length-range') {
        sizeRange = [Number(subject), Number(value)];
        continue;
      }
      if (typeof subject !== 'string' || !subject.startsWith('$') || typeof value !== 'string') return refuse(400, 'InvalidPolicyDocument', `Invalid Policy: Invalid condition ${JSON.stringify(condition)}.`);
      const name = subject.slice(1).toLowerCase();
      named.add(name);
      const actual = valueOf(name);
      const op = String(operator).toLowerCase();
      if (op === 'eq' ? actual !== value : op === 'starts-with' ? !(actual ?? '').startsWith(value) : true) return failed();
      continue;
    }
    if (!condition || typeof condition !== 'object') return refuse(400, 'InvalidPolicyDocument', 'Invalid Policy: Invalid condition.');
    for (const [field, value] of Object.entries(condition)) {
      const name = field.toLowerCase();
      named.add(name);
      if (valueOf(name) !== value) return failed();
    }
  }
  const extra = [...fields.keys()].filter((name) => !unconditionedFields.has(name) && !name.startsWith('x-ignore-') && !named.has(name));
  if (extra.length > 0) return policyFailure(`Extra input fields: ${extra.join(', ')}`);
  if (sizeRange && input.fileBytes > sizeRange[1]) return entityTooLarge(input.fileBytes, sizeRange[1]);
  if (sizeRange && input.fileBytes < sizeRange[0]) {
    return refuse(400, 'EntityTooSmall', 'Your proposed upload is smaller than the minimum allowed size', { ProposedSize: input.fileBytes, MinSizeAllowed: sizeRange[0] });
  }
  return undefined;
}
