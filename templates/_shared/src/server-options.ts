import type { ServerOptions } from 'node:http';

/**
 * Timeouts of the app's HTTP server. Node's defaults let a client hold a
 * socket for a minute sending headers and five minutes sending a body; these
 * close a slow or idle client sooner. The kit's webhook receiver has its own,
 * shorter body deadline (`webhooks.bodyTimeoutMs`).
 */
export const SERVER_OPTIONS = {
  /** The request line and headers must arrive within 10 s. */
  headersTimeout: 10_000,
  /** The whole request (headers and body) within 30 s. */
  requestTimeout: 30_000,
  /** An idle keep-alive connection is closed after 5 s. */
  keepAliveTimeout: 5_000,
  /** How often Node checks the two timeouts above (its default is 30 s). */
  connectionsCheckingInterval: 1_000,
} satisfies ServerOptions;
