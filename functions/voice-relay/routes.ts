/**
 * The WebSocket API ConversationRelay talks to: one function for its three routes. The CDK stack deploys it as an
 * API Gateway WebSocket API and the local runtime serves it with the same events (infra/local/websocket-gateway.ts).
 */
export interface WebSocketRouteGroup {
  name: string;
  entry: string;
  routeKeys: readonly string[];
  /** Memory (and so CPU share) on Lambda, MB, when not the default of its kind (functions/lambda-functions.ts: the rule in docs/performance.md). */
  memoryMb?: number;
}

export const voiceRelayRoutes: WebSocketRouteGroup = {
  name: 'voice-relay',
  entry: 'functions/voice-relay/handler.ts',
  routeKeys: ['$connect', '$disconnect', '$default'],
  // A turn's tokens stream while its CPU-bound work runs: CPU, not memory, sets it.
  memoryMb: 1024,
};
