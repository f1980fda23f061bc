import { logger } from '../platform/logger.ts';
import type { Model } from '../models/model-schemas.ts';
import type { ModelCatalog } from '../models/model-catalog.ts';
import type { Transcriber } from '../models/model-providers.ts';
import { GraphApiError, withRetries, type DownloadedMedia, type WhatsappMessaging } from './graph-client.ts';
import { mediaLimits, type InboundWhatsappMessage, type MediaKind, type MediaObject } from './whatsapp-schemas.ts';

export interface MediaReadingDeps {
  messaging: WhatsappMessaging;
  catalog: ModelCatalog;
  /** The transcriber of a catalog STT model, when it can transcribe. */
  transcriber(model: Model): Transcriber | undefined;
  config: { WHATSAPP_SEND_RETRY_MS: number[] };
}

/** What the user message of a media message is: its text, its `metadata.whatsapp.media`, and the file to keep. */
export interface ReadMedia {
  /** The transcript's text: a placeholder such as `[image: caption]`, or a voice note's words. */
  content: string;
  record: MediaRecord;
  /** The bytes, when they were downloaded: kept in S3, an image passed to a model that accepts images. */
  file?: DownloadedMedia | undefined;
}

/** `metadata.whatsapp.media` of the user message. */
export interface MediaRecord {
  /** Meta's media id: `GET /v1/chat/sessions/{session}/media/{id}` downloads the copy kept. */
  id?: string | undefined;
  mimeType?: string | undefined;
  bytes?: number | undefined;
  sha256?: string | undefined;
  caption?: string | undefined;
  filename?: string | undefined;
  voice?: boolean | undefined;
  /** Set once the file is kept in S3. */
  stored?: boolean | undefined;
  /** Audio: the STT model that transcribed it (`provider/name`). */
  transcribedBy?: string | undefined;
  /** Why the media could not be read (downloaded or transcribed). */
  error?: { code: string; message: string } | undefined;
}

/**
 * Reads a customer's media message: downloads the file (WhatsApp's limit for its type, retried like a send), and
 * for audio transcribes it with `stt` (the agent's STT model, or the deployment's). Never fails the message: what
 * cannot be read becomes a clear placeholder in the transcript, with the reason in `record.error`, and the agent
 * answers all the same.
 */
export async function readMedia(
  deps: MediaReadingDeps,
  number: { phoneNumberId: string },
  accessToken: string,
  message: InboundWhatsappMessage & { type: MediaKind },
  stt: Model | undefined,
): Promise<ReadMedia> {
  const kind = message.type;
  const media: MediaObject = message[kind] ?? {};
  const record: MediaRecord = {
    ...(media.id ? { id: media.id } : {}),
    ...(media.mime_type ? { mimeType: media.mime_type } : {}),
    ...(media.sha256 ? { sha256: media.sha256 } : {}),
    ...(media.caption ? { caption: media.caption } : {}),
    ...(media.filename ? { filename: media.filename } : {}),
    ...(kind === 'audio' ? { voice: media.voice === true } : {}),
  };
  const label = kind === 'audio' && media.voice ? 'voice note' : kind;
  const described = (note?: string) => `[${[label, [media.filename, media.caption, note].filter(Boolean).join(' — ')].filter(Boolean).join(': ')}]`;
  if (!media.id) {
    record.error = { code: 'WHATSAPP_MEDIA_UNAVAILABLE', message: 'The notification names no media id.' };
    return { content: described('could not be downloaded'), record };
  }
  let file: DownloadedMedia;
  try {
    file = await withRetries(deps, () => deps.messaging.downloadMedia({ phoneNumberId: number.phoneNumberId, accessToken, mediaId: media.id as string, maxBytes: mediaLimits[kind] }));
  } catch (error) {
    const failure = error instanceof GraphApiError ? error : new GraphApiError('WHATSAPP_MEDIA_UNAVAILABLE', (error as Error).message, false);
    logger.error('WhatsApp media not downloaded', { phoneNumberId: number.phoneNumberId, mediaId: media.id, code: failure.code, reason: failure.message });
    record.error = { code: failure.code, message: failure.message };
    return { content: described(failure.code === 'WHATSAPP_MEDIA_TOO_LARGE' ? 'too large to read' : 'could not be downloaded'), record };
  }
  Object.assign(record, { mimeType: file.mimeType, bytes: file.body.byteLength, ...(file.sha256 ? { sha256: file.sha256 } : {}) });
  if (kind !== 'audio') return { content: described(), record, file };

  const transcriber = stt && deps.transcriber(stt);
  if (!stt || !transcriber) {
    record.error = { code: 'NO_TRANSCRIPTION_MODEL', message: 'No speech-to-text model that transcribes is configured (docs/whatsapp.md#media).' };
    return { content: described('not transcribed, no speech-to-text model'), record, file };
  }
  try {
    const words = await transcriber.transcribe(file.body, file.mimeType);
    record.transcribedBy = `${stt.provider}/${stt.name}`;
    return { content: words ? `[${label}] ${words}` : described('no speech recognised'), record, file };
  } catch (error) {
    logger.error('WhatsApp voice note not transcribed', { mediaId: media.id, model: `${stt.provider}/${stt.name}`, reason: (error as Error).message });
    record.error = { code: 'TRANSCRIPTION_FAILED', message: (error as Error).message.slice(0, 500) };
    return { content: described('not transcribed, the transcription failed'), record, file };
  }
}

/** The STT model that transcribes an agent's voice notes: the agent's `sttModelId` if it can, else the deployment's first that can. */
export function transcriptionModel(deps: Pick<MediaReadingDeps, 'catalog' | 'transcriber'>, sttModelId: string | undefined): Model | undefined {
  const chosen = sttModelId ? deps.catalog.byId(sttModelId) : undefined;
  if (chosen && deps.transcriber(chosen)) return chosen;
  return deps.catalog.models.find((model) => model.type === 'STT' && deps.transcriber(model) !== undefined);
}
