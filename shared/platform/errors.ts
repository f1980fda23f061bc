/**
 * Domain errors. Each failure has its own class and a stable `code` (the `error.code` of the API envelope);
 * the HTTP status is chosen in exactly one place, `shared/platform/http/error-envelope.ts`.
 */
export interface FieldIssue {
  field: string;
  message: string;
}

export abstract class AppError extends Error {
  abstract readonly code: string;
  readonly details?: FieldIssue[] | undefined;

  constructor(message: string, options?: ErrorOptions & { details?: FieldIssue[] }) {
    super(message, options);
    this.name = new.target.name;
    this.details = options?.details;
  }
}

export class ValidationError extends AppError {
  readonly code = 'VALIDATION_ERROR';
}

export class UnauthorizedError extends AppError {
  readonly code = 'UNAUTHORIZED';
  constructor(message = 'Missing or invalid credentials.', options?: ErrorOptions) {
    super(message, options);
  }
}

export class ForbiddenError extends AppError {
  readonly code = 'FORBIDDEN';
}

export class NotFoundError extends AppError {
  readonly code = 'NOT_FOUND';
}

export class MethodNotAllowedError extends AppError {
  readonly code = 'METHOD_NOT_ALLOWED';
  readonly allowedMethods: string[];

  constructor(message: string, allowedMethods: string[]) {
    super(message);
    this.allowedMethods = allowedMethods;
  }
}

export class PayloadTooLargeError extends AppError {
  readonly code = 'PAYLOAD_TOO_LARGE';
}

export class UnsupportedMediaTypeError extends AppError {
  readonly code = 'UNSUPPORTED_MEDIA_TYPE';
}

export class ToolNameTakenError extends AppError {
  readonly code = 'TOOL_NAME_TAKEN';
}

export class ToolInUseError extends AppError {
  readonly code = 'TOOL_IN_USE';
}

/** The resource changed between our read and our write more often than we retry; the client may retry. */
export class ConcurrentModificationError extends AppError {
  readonly code = 'CONCURRENT_MODIFICATION';
}

export class IdempotencyKeyReusedError extends AppError {
  readonly code = 'IDEMPOTENCY_KEY_REUSED';
}

export class IdempotencyInProgressError extends AppError {
  readonly code = 'IDEMPOTENCY_IN_PROGRESS';
}

export class ModelsNotFoundError extends AppError {
  readonly code = 'MODELS_NOT_FOUND';
}

/** An agent's `analysis` configuration is well-formed but unusable (duplicate names, an enum without values …). */
export class InvalidAnalysisConfigError extends AppError {
  readonly code = 'INVALID_ANALYSIS_CONFIG';
}

export class ToolsNotFoundError extends AppError {
  readonly code = 'TOOLS_NOT_FOUND';
}

export class InvalidToolSchemaError extends AppError {
  readonly code = 'INVALID_TOOL_SCHEMA';
}

/** A tool URL that the egress guard refuses from the URL alone: an internal address, localhost, a platform port. */
export class ToolUrlNotAllowedError extends AppError {
  readonly code = 'TOOL_URL_NOT_ALLOWED';
}

/** A webhook URL whose host is, or resolves to, an address outbound requests may not reach, or does not resolve. */
export class WebhookUrlNotAllowedError extends AppError {
  readonly code = 'WEBHOOK_URL_NOT_ALLOWED';
}

/** A key cannot be given scopes that the caller creating it does not hold. */
export class ScopeEscalationError extends AppError {
  readonly code = 'FORBIDDEN';
}

/** A service we depend on (the identity provider's JWKS, later model providers) could not be reached. */
export class UpstreamUnavailableError extends AppError {
  readonly code = 'UPSTREAM_UNAVAILABLE';
}

export class SessionNotFoundError extends AppError {
  readonly code = 'SESSION_NOT_FOUND';
}

export class SessionExpiredError extends AppError {
  readonly code = 'SESSION_EXPIRED';
}

export class InvalidSessionError extends AppError {
  readonly code = 'INVALID_SESSION';
}

export class SessionCreationError extends AppError {
  readonly code = 'SESSION_CREATION_ERROR';
}

export class AgentInactiveError extends AppError {
  readonly code = 'AGENT_INACTIVE';
}

export class MessagesHistoryError extends AppError {
  readonly code = 'MESSAGES_HISTORY_ERROR';
}

/** Another turn of the session kept the session busy for longer than a send waits. */
export class SessionBusyError extends AppError {
  readonly code = 'SESSION_BUSY';
}

/** The model provider failed during a reply; the turn is recorded as failed. */
export class ModelError extends AppError {
  readonly code = 'MODEL_ERROR';
}

/** A replay was asked for a delivery that is still being attempted. */
export class DeliveryPendingError extends AppError {
  readonly code = 'DELIVERY_PENDING';
}

/** A replay was asked for a delivery whose endpoint is disabled; enable it first. */
export class WebhookDisabledError extends AppError {
  readonly code = 'WEBHOOK_DISABLED';
}

/** The subscription is canceled or paused (or past due beyond its grace period): operations that consume are refused. */
export class SubscriptionInactiveError extends AppError {
  readonly code = 'SUBSCRIPTION_INACTIVE';
}

/** The subscription's status does not allow this change (e.g. resuming an active subscription). */
export class InvalidSubscriptionTransitionError extends AppError {
  readonly code = 'INVALID_SUBSCRIPTION_TRANSITION';
}

/** A plan the catalog does not hold. */
export class UnknownPlanError extends AppError {
  readonly code = 'UNKNOWN_PLAN';
}

/** A paid plan needs a payment method on file with the billing provider; a Checkout collects one. */
export class PaymentMethodRequiredError extends AppError {
  readonly code = 'PAYMENT_METHOD_REQUIRED';
}

/** The billing provider declined the payment (the card on file was declined); nothing changed. */
export class PaymentFailedError extends AppError {
  readonly code = 'PAYMENT_FAILED';
}

/** Nothing to pay through a Checkout: the plan is free, the deployment bills manually, or a paid subscription runs. */
export class CheckoutNotNeededError extends AppError {
  readonly code = 'CHECKOUT_NOT_NEEDED';
}

/** A refusal the client may retry after `retryAfterSeconds` (sent as `Retry-After`). */
abstract class RetryLaterError extends AppError {
  readonly retryAfterSeconds: number;

  constructor(message: string, retryAfterSeconds: number) {
    super(message);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** The seconds after which a refused request may be retried, for the errors that say so. */
export function retryAfterOf(error: unknown): number | undefined {
  return error instanceof RetryLaterError ? error.retryAfterSeconds : undefined;
}

/** A period quota is used up; the client may try again when the period ends (`Retry-After`). */
export class QuotaExceededError extends RetryLaterError {
  readonly code = 'QUOTA_EXCEEDED';
}

/** The plan's concurrent calls are all in progress; the client may try again once one ends (`Retry-After`). */
export class ConcurrentCallsExceededError extends RetryLaterError {
  readonly code = 'CONCURRENT_CALLS_EXCEEDED';
}

/** The organization (or the API key) sent more requests than its rate limit admits; retry after `Retry-After`. */
export class RateLimitedError extends RetryLaterError {
  readonly code = 'RATE_LIMITED';
}

export class PhoneNumberTakenError extends AppError {
  readonly code = 'PHONE_NUMBER_TAKEN';
}

/** A WhatsApp number (Meta's phone number id) some organization has connected already: numbers belong to one. */
export class WhatsappNumberTakenError extends AppError {
  readonly code = 'WHATSAPP_NUMBER_TAKEN';
}

/** Meta refused a template message: no approved template of that name and language, or its parameters do not fit it. */
export class WhatsappTemplateRejectedError extends AppError {
  readonly code = 'WHATSAPP_TEMPLATE_REJECTED';
}

/** Meta refused the number's access token (expired, revoked, or without whatsapp_business_messaging). */
export class WhatsappCredentialsRejectedError extends AppError {
  readonly code = 'WHATSAPP_CREDENTIALS_REJECTED';
}

/** Meta refused a message for another reason than its template or token (an invalid recipient…). */
export class WhatsappSendRefusedError extends AppError {
  readonly code = 'WHATSAPP_SEND_REFUSED';
}

/** The Graph API could not be reached or kept failing (5xx, throttling) through the retries. */
export class WhatsappUnavailableError extends AppError {
  readonly code = 'WHATSAPP_UNAVAILABLE';
}

export class VoiceNotFoundError extends AppError {
  readonly code = 'VOICE_NOT_FOUND';
}

export class AgentNotVoiceEnabledError extends AppError {
  readonly code = 'AGENT_NOT_VOICE_ENABLED';
}

export class VoicePipelineModeUnsupportedError extends AppError {
  readonly code = 'VOICE_PIPELINE_MODE_UNSUPPORTED';
}

export class MediaWorkerNotConfiguredError extends AppError {
  readonly code = 'MEDIA_WORKER_NOT_CONFIGURED';
}

export class TelephonyNotConfiguredError extends AppError {
  readonly code = 'TELEPHONY_NOT_CONFIGURED';
}

export class TelephonyCredentialsRejectedError extends AppError {
  readonly code = 'TELEPHONY_CREDENTIALS_REJECTED';
}

export class TelephonyUnavailableError extends AppError {
  readonly code = 'TELEPHONY_UNAVAILABLE';
}

/** The carrier refused a request about numbers for a reason the caller can correct (its message is passed on). */
export class TelephonyRequestRejectedError extends AppError {
  readonly code = 'TELEPHONY_REQUEST_REJECTED';
}

/** The number to buy is no longer for sale (another buyer took it), or its area code has none left. */
export class PhoneNumberUnavailableError extends AppError {
  readonly code = 'PHONE_NUMBER_UNAVAILABLE';
}

/** A number to import is not in the organization's carrier account. */
export class PhoneNumberNotInAccountError extends AppError {
  readonly code = 'PHONE_NUMBER_NOT_IN_ACCOUNT';
}

/** A request claiming to come from a provider (carrier, billing) whose signature does not verify (or is missing, or too old). */
export class InvalidSignatureError extends AppError {
  readonly code = 'INVALID_SIGNATURE';
}

/** An agent names a knowledge store its organization does not have. */
export class KnowledgeStoreNotFoundError extends AppError {
  readonly code = 'KNOWLEDGE_STORE_NOT_FOUND';
}

/** A knowledge store cannot be deleted while agents use it. */
export class KnowledgeStoreInUseError extends AppError {
  readonly code = 'KNOWLEDGE_STORE_IN_USE';
}

/** The embedding model that built a store is not available to query it (it must be re-indexed). */
export class EmbedderMismatchError extends AppError {
  readonly code = 'EMBEDDER_MISMATCH';
}

/** The campaign's status does not allow this (e.g. pausing a campaign that is not running); details name the current status. */
export class InvalidCampaignTransitionError extends AppError {
  readonly code = 'INVALID_CAMPAIGN_TRANSITION';
}

export class ContactPhoneTakenError extends AppError {
  readonly code = 'CONTACT_PHONE_TAKEN';
}
