import { AppError, type FieldIssue } from '../errors.ts';

/** Every error code the API answers with, and its status. */
export const statusByCode = {
  VALIDATION_ERROR: 400,
  TOOL_URL_NOT_ALLOWED: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  TOOL_NAME_TAKEN: 409,
  TOOL_IN_USE: 409,
  DELIVERY_PENDING: 409,
  WEBHOOK_DISABLED: 409,
  KNOWLEDGE_STORE_IN_USE: 409,
  EMBEDDER_MISMATCH: 409,
  CONCURRENT_MODIFICATION: 409,
  IDEMPOTENCY_KEY_REUSED: 409,
  IDEMPOTENCY_IN_PROGRESS: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  MODELS_NOT_FOUND: 422,
  TOOLS_NOT_FOUND: 422,
  INVALID_TOOL_SCHEMA: 422,
  INVALID_ANALYSIS_CONFIG: 422,
  WEBHOOK_URL_NOT_ALLOWED: 422,
  KNOWLEDGE_STORE_NOT_FOUND: 422,
  UPSTREAM_UNAVAILABLE: 503,
  SESSION_NOT_FOUND: 404,
  SESSION_EXPIRED: 410,
  INVALID_SESSION: 409,
  SESSION_BUSY: 409,
  AGENT_INACTIVE: 422,
  SESSION_CREATION_ERROR: 503,
  MESSAGES_HISTORY_ERROR: 503,
  MODEL_ERROR: 502,
  PHONE_NUMBER_TAKEN: 409,
  CONTACT_PHONE_TAKEN: 409,
  WHATSAPP_NUMBER_TAKEN: 409,
  WHATSAPP_TEMPLATE_REJECTED: 422,
  WHATSAPP_CREDENTIALS_REJECTED: 422,
  WHATSAPP_SEND_REFUSED: 422,
  WHATSAPP_UNAVAILABLE: 502,
  AGENT_NOT_VOICE_ENABLED: 422,
  VOICE_NOT_FOUND: 422,
  VOICE_PIPELINE_MODE_UNSUPPORTED: 422,
  MEDIA_WORKER_NOT_CONFIGURED: 422,
  TELEPHONY_NOT_CONFIGURED: 422,
  TELEPHONY_CREDENTIALS_REJECTED: 422,
  TELEPHONY_UNAVAILABLE: 502,
  TELEPHONY_REQUEST_REJECTED: 422,
  PHONE_NUMBER_UNAVAILABLE: 409,
  PHONE_NUMBER_NOT_IN_ACCOUNT: 422,
  INVALID_SIGNATURE: 401,
  SUBSCRIPTION_INACTIVE: 403,
  INVALID_SUBSCRIPTION_TRANSITION: 409,
  CHECKOUT_NOT_NEEDED: 409,
  PAYMENT_METHOD_REQUIRED: 402,
  PAYMENT_FAILED: 402,
  INVALID_CAMPAIGN_TRANSITION: 409,
  QUOTA_EXCEEDED: 429,
  CONCURRENT_CALLS_EXCEEDED: 429,
  RATE_LIMITED: 429,
  UNKNOWN_PLAN: 422,
  GENERIC_ERROR: 500,
} as const satisfies Record<string, number>;

export type ErrorCode = keyof typeof statusByCode;

export interface ErrorEnvelope {
  error: { code: string; message: string; status: number; details?: FieldIssue[] };
  meta: { requestId: string; timestamp: string };
}

/** The one place an error becomes an HTTP status and body. Anything unexpected is a 500 that reveals nothing. */
export function toErrorEnvelope(error: unknown, requestId: string, now = new Date()): ErrorEnvelope {
  const meta = { requestId, timestamp: now.toISOString() };
  if (error instanceof AppError) {
    const status: number = statusByCode[error.code as ErrorCode] ?? 500;
    return {
      error: { code: error.code, message: error.message, status, ...(error.details ? { details: error.details } : {}) },
      meta,
    };
  }
  return {
    error: { code: 'GENERIC_ERROR', message: `Internal error; quote request id ${requestId} to support.`, status: 500 },
    meta,
  };
}
