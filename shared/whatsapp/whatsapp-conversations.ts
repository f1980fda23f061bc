import type { Config } from '../platform/config.ts';
import {
  AgentInactiveError,
  AppError,
  NotFoundError,
  SessionCreationError,
  SessionNotFoundError,
  ValidationError,
  WhatsappCredentialsRejectedError,
  WhatsappSendRefusedError,
  WhatsappTemplateRejectedError,
  WhatsappUnavailableError,
  type FieldIssue,
} from '../platform/errors.ts';
import { newId } from '../platform/clock.ts';
import { assertMayConsume, type AdmissionDeps } from '../billing/admission.ts';
import { fillPlaceholders, placeholderNames } from '../agents/placeholders.ts';
import { boundVersion, publishedAgent } from '../agents/agent-versions.ts';
import type { StoredSession } from '../conversations/ports.ts';
import type { Message } from '../conversations/session-schemas.ts';
import { sessionEvents } from '../conversations/session-events.ts';
import { expiryEpochSeconds } from '../conversations/sessions.ts';
import { newMessageId } from '../conversations/turn.ts';
import { GraphApiError, withRetries, type WhatsappMessaging } from './graph-client.ts';
import { mediaKey, type WhatsappMediaStore } from './media-store.ts';
import { customerKey, type StartConversationInput, type WhatsappTemplate } from './whatsapp-schemas.ts';
import { customerServiceWindowMs, type WhatsappDeps } from './whatsapp.ts';
import { modelOfOrganization } from '../models/provider-keys.ts';

/** What business-initiated conversations and media downloads need besides the numbers: the Graph API, admission and the media bucket. */
export interface WhatsappOutboundDeps extends WhatsappDeps, AdmissionDeps {
  messaging: WhatsappMessaging;
  media: WhatsappMediaStore;
  config: WhatsappDeps['config'] & AdmissionDeps['config'] & Pick<Config, 'WHATSAPP_SEND_RETRY_MS'>;
}

/**
 * `POST /v1/chat/whatsapp/numbers/{id}/conversations`: a business starts a conversation with an approved template
 * (WhatsApp takes nothing else from a business outside the 24-hour window). Its parameters are filled from the
 * session variables; Meta's refusal is the answer, and nothing is kept of a conversation Meta refused. Once Meta
 * accepts it, an OUTBOUND session holds the template message and waits 24 hours for the customer's reply, which
 * the agent then answers in it. The session is keyed by the phone number the template went to: the reply names it
 * beside the customer's BSUID, and is matched by either (`sessionKeysOf`).
 */
export async function startConversation(deps: WhatsappOutboundDeps, orgId: string, numberId: string, input: StartConversationInput): Promise<{ sessionId: string; wamid: string; to: string }> {
  const number = await deps.whatsapp.getNumber(orgId, numberId);
  if (!number) throw new NotFoundError(`WhatsApp number ${numberId} not found.`);
  const agentId = input.agentId ?? number.agentId;
  const [agent] = await Promise.all([publishedAgent(deps, orgId, agentId), assertMayConsume(deps, orgId, 'chat_messages')]);
  if (!agent) throw new NotFoundError(`Agent ${agentId} not found.`);
  if (!agent.isActive) throw new AgentInactiveError(`Agent ${agent.id} is inactive; activate it to start conversations.`);
  if (!(await modelOfOrganization(deps, orgId, agent.modelId))) throw new SessionCreationError(`The agent's model ${agent.modelId} is not available in this deployment.`);
  const template = filledTemplate(input.template, input.sessionVariables);
  const accessToken = await deps.whatsapp.openSecret(number, 'accessToken');
  let sent: { wamid: string; waId?: string | undefined; attempts: number };
  try {
    sent = await withRetries(deps, () => deps.messaging.sendTemplate({ phoneNumberId: number.phoneNumberId, accessToken, to: { waId: input.to }, template }));
  } catch (error) {
    throw refusalOf(error);
  }

  const now = deps.clock.now();
  const at = now.toISOString();
  const waId = sent.waId ?? input.to;
  const sessionId = newId();
  const message: Message = {
    id: newMessageId(),
    sessionId,
    role: 'ASSISTANT',
    content: templateText(template),
    metadata: { status: 'COMPLETED', whatsapp: { template, sends: [{ wamid: sent.wamid, status: 'sent', attempts: sent.attempts, updatedAt: at }] } },
    createdAt: at,
  };
  // Open for the reply as long as the template is: a customer may answer it hours later.
  const activeUntil = now.getTime() + customerServiceWindowMs;
  const session: StoredSession = {
    id: sessionId,
    orgId,
    agentId: agent.id,
    ...boundVersion(agent),
    type: 'CHAT',
    direction: 'OUTBOUND',
    platform: 'WHATSAPP',
    state: 'OPEN',
    metadata: { sessionVariables: input.sessionVariables, whatsapp: { numberId: number.id, phoneNumberId: number.phoneNumberId, customerWaId: waId } },
    createdAt: at,
    updatedAt: at,
    lastActivityAt: at,
    activeUntil,
    messageCount: 1,
    nextSeq: 2,
  };
  await deps.whatsapp.openCustomerSession(session, expiryEpochSeconds(deps, activeUntil), [sessionEvents.sessionCreated(session)], { numberId: number.id, customerKey: customerKey({ waId }) }, { message, wamid: sent.wamid });
  return { sessionId, wamid: sent.wamid, to: waId };
}

/**
 * The template with its parameters filled from the session variables: `{{name}}` in any of a parameter's strings,
 * and a named parameter without `text` takes the variable of its `parameter_name`. A variable missing is a 400
 * naming the parameter, before anything is sent.
 */
function filledTemplate(template: WhatsappTemplate, variables: Record<string, unknown>): WhatsappTemplate {
  const missing: FieldIssue[] = [];
  const has = (name: string) => Object.hasOwn(variables, name) && variables[name] !== undefined && variables[name] !== null;
  const fill = (value: unknown, path: string): unknown => {
    if (typeof value === 'string') {
      const absent = placeholderNames(value).filter((name) => !has(name));
      if (absent.length) missing.push({ field: path, message: `names ${absent.map((name) => `{{${name}}}`).join(', ')}, which sessionVariables does not have` });
      return fillPlaceholders(value, variables, (text) => text);
    }
    if (Array.isArray(value)) return value.map((item, index) => fill(item, `${path}[${index}]`));
    if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, fill(item, `${path}.${key}`)]));
    return value;
  };
  const components = template.components?.map((component, componentIndex) => ({
    ...component,
    ...(component.parameters
      ? {
          parameters: component.parameters.map((parameter, parameterIndex) => {
            const path = `template.components[${componentIndex}].parameters[${parameterIndex}]`;
            const named = parameter.type === 'text' && parameter.text === undefined && parameter.parameter_name !== undefined;
            if (named && !has(parameter.parameter_name as string)) {
              missing.push({ field: `${path}.parameter_name`, message: `${parameter.parameter_name} is not in sessionVariables` });
            }
            const filled = fill(parameter, path) as typeof parameter;
            return named && has(parameter.parameter_name as string) ? { ...filled, text: fillPlaceholders(`{{${parameter.parameter_name}}}`, variables, (text) => text) } : filled;
          }),
        }
      : {}),
  }));
  if (missing.length) throw new ValidationError('The template names session variables the request does not give.', { details: missing });
  return { ...template, ...(components ? { components } : {}) };
}

/** The template message as the transcript shows it: its name, language and parameters (Meta holds its text). */
function templateText(template: WhatsappTemplate): string {
  const values = (template.components ?? []).flatMap((component) => component.parameters ?? []).flatMap((parameter) => (typeof parameter.text === 'string' ? [parameter.text] : []));
  return `[template ${template.name} (${template.language.code})${values.length ? `: ${values.join(', ')}` : ''}]`;
}

/** Meta's refusal as the API's error. */
function refusalOf(error: unknown): AppError {
  if (!(error instanceof GraphApiError)) return new WhatsappUnavailableError(`The template could not be sent: ${(error as Error).message}`);
  switch (error.code) {
    case 'WHATSAPP_TEMPLATE_REJECTED':
      return new WhatsappTemplateRejectedError(error.message);
    case 'WHATSAPP_CREDENTIALS_REJECTED':
      return new WhatsappCredentialsRejectedError(`${error.message} Replace the number's accessToken (PATCH /v1/chat/whatsapp/numbers/{id}).`);
    case 'WHATSAPP_UNAVAILABLE':
      return new WhatsappUnavailableError(error.message);
    default:
      return new WhatsappSendRefusedError(error.message);
  }
}

/** How long a media's signed URL lasts: enough to open it, too short to pass around. */
const mediaLinkSeconds = 300;

/** `GET /v1/chat/sessions/{id}/media/{mediaId}`: a short-lived signed URL of the copy of a customer's media. */
export async function mediaLink(deps: Pick<WhatsappOutboundDeps, 'sessions' | 'media'>, orgId: string, sessionId: string, mediaId: string): Promise<string> {
  const session = await deps.sessions.get(orgId, sessionId);
  if (!session) throw new SessionNotFoundError(`Session ${sessionId} not found.`);
  const key = mediaKey(orgId, sessionId, mediaId);
  if (session.platform !== 'WHATSAPP' || !(await deps.media.exists(key))) throw new NotFoundError(`Session ${sessionId} has no media ${mediaId}.`);
  return deps.media.signedUrl(key, mediaLinkSeconds);
}
