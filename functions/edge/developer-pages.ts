import type { Config } from '../../shared/platform/config.ts';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { RawBody } from '../../shared/platform/http/handler.ts';
import { buildOpenApiDocument, type NamedComponents } from '../../shared/platform/http/openapi.ts';
import type { RouteGroup } from '../../shared/platform/http/route.ts';
import type { assetNames } from './routes.ts';

/** Beside this module locally; beside the bundle on Lambda (copied there by the stack). */
const assetDirectory = new URL('./assets/', import.meta.url);

/** Developer pages are for people with a key, not for search engines. */
const developerHeaders = { 'x-robots-tag': 'noindex, nofollow' };

/** Our pages load nothing from elsewhere: no CDN, no fonts service; Scalar injects its styles inline. */
/** The pages' Content-Security-Policy: our own origin, and the media worker's for the playground's voice sessions. */
const pageSecurity = (connect = '') =>
  `default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'${connect}; frame-ancestors 'none'`;

/** The media worker's origin (`wss://host`), or nothing without a worker. */
const workerOrigin = (url: string | undefined): string => (url ? ` ${new URL(url).origin}` : '');

const contentTypes: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.md': 'text/markdown; charset=utf-8',
};

type RequestHeaders = Readonly<Record<string, string | undefined>>;

interface Prepared {
  body: string;
  gzipped: string;
  etag: string;
}

const prepared = new Map<string, Prepared>();

/** Each file is read, hashed and compressed once per process. */
function prepare(key: string, load: () => string): Prepared {
  let entry = prepared.get(key);
  if (!entry) {
    const body = load();
    entry = {
      body,
      gzipped: gzipSync(body).toString('base64'),
      etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
    };
    prepared.set(key, entry);
  }
  return entry;
}

const readAsset = (name: string) => () => readFileSync(new URL(name, assetDirectory), 'utf8');

function respond(entry: Prepared, contentType: string, headers: RequestHeaders, cacheControl: string, extra: Record<string, string> = {}): RawBody {
  const common = { 'content-type': contentType, 'cache-control': cacheControl, etag: entry.etag, vary: 'accept-encoding', ...developerHeaders, ...extra };
  if (headers['if-none-match']?.split(/\s*,\s*/).includes(entry.etag)) return new RawBody('', common, { statusCode: 304 });
  if (/\bgzip\b/.test(headers['accept-encoding'] ?? '')) return new RawBody(entry.gzipped, { ...common, 'content-encoding': 'gzip' }, { isBase64Encoded: true });
  return new RawBody(entry.body, common);
}

const page = (title: string, body: string) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
<link rel="icon" href="data:,">
<title>${title}</title>
${body}`;

const referencePage = page(
  'Agent Platform API reference',
  `</head>
<body>
<noscript>The reference needs JavaScript; the description itself is at <a href="/openapi.json">/openapi.json</a>.</noscript>
<div id="reference"></div>
<script src="/assets/scalar.js"></script>
<script src="/assets/docs.js"></script>
</body>
</html>
`,
);

const playgroundPage = page(
  'Agent Platform playground',
  `<link rel="stylesheet" href="/assets/playground.css">
</head>
<body>
<div id="playground"><p>Loading the playground…</p></div>
<noscript>The playground needs JavaScript.</noscript>
<script type="module" src="/assets/playground.js"></script>
</body>
</html>
`,
);

/** The implementations of the developer routes of the edge group. */
export function developerPages(groups: readonly RouteGroup[], namedComponents: NamedComponents) {
  const html = (key: string, body: string, headers: RequestHeaders, security = pageSecurity()) =>
    respond(prepare(key, () => body), 'text/html; charset=utf-8', headers, 'no-cache', { 'content-security-policy': security });
  return {
    // Built on the first request, then served from memory for the life of the process.
    openApiDocument: async ({ headers }: { headers: RequestHeaders }) =>
      respond(prepare('openapi.json', () => JSON.stringify(buildOpenApiDocument(groups, namedComponents))), 'application/json; charset=utf-8', headers, 'public, max-age=300'),
    apiReference: async ({ headers }: { headers: RequestHeaders }) => html('docs', referencePage, headers),
    playground: async ({ headers, deps }: { headers: RequestHeaders; deps: { config: Pick<Config, 'MEDIA_WORKER_URL'> } }) =>
      html('playground', playgroundPage, headers, pageSecurity(workerOrigin(deps.config.MEDIA_WORKER_URL))),
    changelog: async ({ headers }: { headers: RequestHeaders }) =>
      respond(prepare('CHANGELOG.md', readAsset('CHANGELOG.md')), contentTypes['.md'] as string, headers, 'public, max-age=300'),
    asset: async ({ headers, params }: { headers: RequestHeaders; params: { name: (typeof assetNames)[number] } }) =>
      respond(prepare(params.name, readAsset(params.name)), contentTypes[params.name.slice(params.name.lastIndexOf('.'))] as string, headers, 'public, max-age=300'),
  };
}

