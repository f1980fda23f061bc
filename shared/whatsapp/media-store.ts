/**
 * Where WhatsApp customers' media are kept: one object per media, `<org>/<session>/<media id>` (S3 in
 * `s3-media.ts`, which only the runtime imports, so that the S3 client stays out of the functions that keep none).
 */
export interface WhatsappMediaStore {
  put(key: string, body: Uint8Array, contentType: string): Promise<void>;
  exists(key: string): Promise<boolean>;
  signedUrl(key: string, expiresInSeconds: number): Promise<string>;
}

/** The object key of a customer's media: under the organization and the session its message is in. */
export const mediaKey = (orgId: string, sessionId: string, mediaId: string): string => `${orgId}/${sessionId}/${mediaId}`;
