/**
 * A local stand-in for Amazon Bedrock's two endpoints the knowledge stores use, on 127.0.0.1 and a free port, for
 * `AWS_ENDPOINT_URL_BEDROCK_RUNTIME` and `AWS_ENDPOINT_URL_BEDROCK_AGENT_RUNTIME`:
 *
 * - Bedrock Runtime `POST /model/{modelId}/invoke` for Titan Text Embeddings v2: `{inputText, dimensions?,
 *   normalize?}` → `{embedding, inputTextTokenCount}`; one text per call, as the service takes; `dimensions` other
 *   than 256/512/1024 is a 400 `ValidationException`. The embedding is the built-in embedder's hashing at that size.
 * - Bedrock Agent Runtime `POST /rerank` (Cohere Rerank 3.5, Amazon Rerank): `{queries: [{type: TEXT, textQuery}],
 *   sources: [{type: INLINE, inlineDocumentSource: {type: TEXT, textDocument}}], rerankingConfiguration:
 *   {type: BEDROCK_RERANKING_MODEL, bedrockRerankingConfiguration: {modelConfiguration: {modelArn}, numberOfResults?}}}`
 *   → `{results: [{index, relevanceScore}]}` best first, scored by `rerankScore`.
 *
 * Every request must carry SigV4 headers (`Authorization: AWS4-HMAC-SHA256 Credential=<key>/<date>/<region>/bedrock/
 * aws4_request, SignedHeaders=…, Signature=…` and `X-Amz-Date`), or it is answered 403 `UnrecognizedClientException`,
 * as the service does. Requests are recorded.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { embedText } from '../../shared/models/builtin-embedder.ts';
import { listenOnLoopback } from './loopback-server.ts';

export interface BedrockStubOptions {
  /** A document's relevance to a query (0–1); by default the share of the query's words it contains. */
  rerankScore?: (query: string, document: string) => number;
}

export interface BedrockRequest {
  path: string;
  headers: IncomingHttpHeaders;
  body: any;
}

export interface BedrockStub {
  baseUrl: string;
  requests: BedrockRequest[];
  close(): Promise<void>;
}

const sigV4 = /^AWS4-HMAC-SHA256 Credential=[^/]+\/\d{8}\/[a-z0-9-]+\/bedrock\/aws4_request, SignedHeaders=[a-z0-9;-]+, Signature=[0-9a-f]{64}$/;
const titanDimensions = [256, 512, 1024];

const wordsOf = (text: string) => new Set(text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []);

function coverage(query: string, document: string): number {
  const wanted = [...wordsOf(query)];
  const present = wordsOf(document);
  return wanted.length ? wanted.filter((word) => present.has(word)).length / wanted.length : 0;
}

export async function startBedrockStub(options: BedrockStubOptions = {}): Promise<BedrockStub> {
  const requests: BedrockRequest[] = [];
  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => send(response, 500, { message: String(error) }, 'InternalServerException'));
  });

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = decodeURIComponent((request.url ?? '/').split('?')[0]!);
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
    requests.push({ path, headers: request.headers, body });
    if (!sigV4.test(String(request.headers.authorization ?? '')) || !request.headers['x-amz-date']) {
      send(response, 403, { message: 'The security token included in the request is invalid.' }, 'UnrecognizedClientException');
      return;
    }
    const invoke = /^\/model\/([^/]+)\/invoke$/.exec(path);
    if (request.method === 'POST' && invoke) {
      if (!invoke[1]!.startsWith('amazon.titan-embed-text-v2')) return send(response, 404, { message: `Model ${invoke[1]} not found.` }, 'ResourceNotFoundException');
      const dimensions = body.dimensions ?? 1024;
      if (typeof body.inputText !== 'string' || !titanDimensions.includes(dimensions)) {
        return send(response, 400, { message: 'Malformed input request: inputText required, dimensions one of 256, 512, 1024' }, 'ValidationException');
      }
      return send(response, 200, { embedding: embedText(body.inputText, dimensions), inputTextTokenCount: body.inputText.split(/\s+/).length });
    }
    if (request.method === 'POST' && path === '/rerank') {
      const query = body.queries?.[0]?.textQuery?.text;
      const config = body.rerankingConfiguration?.bedrockRerankingConfiguration;
      const documents: string[] = (body.sources ?? []).map((source: any) => source?.inlineDocumentSource?.textDocument?.text);
      if (typeof query !== 'string' || !/^arn:aws:bedrock:[a-z0-9-]+::foundation-model\/(cohere\.rerank-v3-5:0|amazon\.rerank-v1:0)$/.test(config?.modelConfiguration?.modelArn ?? '') || documents.some((text) => typeof text !== 'string')) {
        return send(response, 400, { message: 'Malformed rerank request' }, 'ValidationException');
      }
      const score = options.rerankScore ?? coverage;
      const results = documents.map((text, index) => ({ index, relevanceScore: score(query, text) })).sort((left, right) => right.relevanceScore - left.relevanceScore);
      return send(response, 200, { results: results.slice(0, config.numberOfResults ?? results.length) });
    }
    send(response, 404, { message: `No route for ${request.method} ${path}` }, 'UnknownOperationException');
  }

  const port = await listenOnLoopback(server);
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}

function send(response: ServerResponse, status: number, body: object, errorType?: string): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json', ...(errorType ? { 'x-amzn-errortype': errorType } : {}) });
  response.end(text);
}
