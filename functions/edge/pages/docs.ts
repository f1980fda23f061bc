/** Points Scalar's standalone bundle (loaded before this script as `/assets/scalar.js`) at our description. */
declare const Scalar: { createApiReference(selector: string, configuration: Record<string, unknown>): unknown };

Scalar.createApiReference('#api-reference', {
  url: '/openapi.json',
  // Nothing from elsewhere: system fonts, no telemetry (the page's Content-Security-Policy would block them anyway).
  withDefaultFonts: false,
  telemetry: false,
  showDeveloperTools: 'never',
  metaData: { title: 'Agent Platform API reference' },
});
