/** Points Scalar's standalone bundle (loaded before this script as `/assets/scalar.js`) at our description. */
import { storedKeyName } from './stored-key.ts';

declare const Scalar: { createApiReference(selector: string, configuration: Record<string, unknown>): unknown };

/** The key given to the playground in this tab, if any: requests tried from the reference use it. */
const playgroundKey = sessionStorage.getItem(storedKeyName);

// Mounted on #reference: the bundle also mounts a second, unconfigured reference beside any #api-reference element.
Scalar.createApiReference('#reference', {
  url: '/openapi.json',
  metaData: { title: 'Agent Platform API reference' },
  // Nothing from elsewhere (the page's Content-Security-Policy refuses it anyway): system fonts, no telemetry, no
  // "Ask AI" agent (on by default on localhost; it talks to api.scalar.com), and test requests sent straight to this
  // origin rather than through proxy.scalar.com.
  withDefaultFonts: false,
  telemetry: false,
  agent: { disabled: true },
  proxyUrl: '',
  showDeveloperTools: 'never',
  hideClientButton: true,
  authentication: { preferredSecurityScheme: 'apiKey', securitySchemes: { apiKey: { value: playgroundKey ?? '' } } },
});
