/**
 * Stopping an instance without failing what it accepted (docs/operations.md):
 *
 * 1. draining begins: health answers 503 "draining" (readiness fails), every
 *    answer carries `Connection: close`, idle keep-alive sockets are closed;
 * 2. after `keepListeningMs`, the server stops accepting connections;
 * 3. requests already accepted and work already acknowledged (webhook handlers
 *    answered 202, the purges they started) finish;
 * 4. the kit closes: background loops stop (token sweep, purge outbox; a purge
 *    not started is left to the outbox of another instance), refreshed tokens
 *    waiting to be stored get one more write, and storage closes last;
 * 5. all within `deadlineMs`: what still runs at the deadline is cut and logged.
 *
 * One sequence for every host: a Node `http.Server` (Express, Hono on Node) is
 * watched and closed here; on Bun, Deno and other Fetch hosts the app passes
 * its own `stop` (`server.stop()`, `server.shutdown()`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Drain } from '../core/drain.js';
import type { MinimalLogger } from '../core/logger.js';
import { parseOptions } from '../options/index.js';
import {
  type ResolvedShutdownOptions,
  type ShutdownOptions,
  shutdownOptionsSchema,
} from './options.js';

export {
  type ResolvedShutdownOptions,
  SHUTDOWN_DEFAULTS,
  type ShutdownOptions,
  shutdownOptionsSchema,
} from './options.js';

/** What the kit needs of a Node HTTP server (`http.Server`, `https.Server`). */
export interface NodeServer {
  close(callback?: (err?: Error) => void): unknown;
  closeIdleConnections(): void;
  closeAllConnections(): void;
  prependListener(
    event: 'request',
    listener: (req: IncomingMessage, res: ServerResponse) => void,
  ): unknown;
}

/** `kit.shutdown(options)`. */
export interface ShutdownCallOptions extends ShutdownOptions {
  /** The Node server to drain and close (Express, Hono on Node). */
  server?: NodeServer | undefined;
  /**
   * Stops accepting requests on another host (Bun: `() => server.stop()`, Deno:
   * `() => server.shutdown()`); called where a Node server is closed.
   */
  stop?: (() => unknown) | undefined;
}

/** What `kit.shutdown()` reports. */
export interface ShutdownResult {
  /** Every accepted request and acknowledged work finished before the deadline. */
  drained: boolean;
  /** Requests or acknowledged work still running at the deadline (cut). */
  cut: number;
  /** The kit (background work, storage) closed within the deadline. */
  closed: boolean;
  /** From the start of the shutdown to its end. */
  elapsedMs: number;
}

/** Time kept back from the wait for requests, for the kit to close within the deadline. */
function closeReserveMs(deadlineMs: number): number {
  return Math.min(2_000, Math.floor(deadlineMs / 4));
}

/** How often idle keep-alive sockets are closed while draining. */
const IDLE_SWEEP_MS = 100;

/** The per-call options over the kit's (`storeApp({ shutdown })`), validated by the same schema. */
export function shutdownOptionsOf(
  base: ResolvedShutdownOptions,
  call: ShutdownOptions = {},
): ResolvedShutdownOptions {
  if (call.deadlineMs === undefined && call.keepListeningMs === undefined) return base;
  return parseOptions(
    shutdownOptionsSchema,
    {
      deadlineMs: call.deadlineMs ?? base.deadlineMs,
      keepListeningMs: call.keepListeningMs ?? base.keepListeningMs,
    },
    { prefix: 'shutdown' },
  );
}

/**
 * Watches a Node server's requests from now on: each counts as in flight until
 * its response closes, and those whose headers are not sent when draining begins
 * get `Connection: close` (later ones get it from the start).
 */
export function watchServer(server: NodeServer, drain: Drain): void {
  const live = new Set<ServerResponse>();
  drain.onBegin(() => {
    for (const res of live) if (!res.headersSent) res.setHeader('connection', 'close');
    live.clear();
  });
  server.prependListener('request', function storeAppInFlight(_req, res) {
    const leave = drain.enter();
    if (drain.draining()) res.setHeader('connection', 'close');
    else live.add(res);
    res.once('close', () => {
      live.delete(res);
      leave();
    });
  });
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (ms <= 0 || signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}

export interface ShutdownDeps {
  drain: Drain;
  /** Stops background work, stores what waits, closes storage (the composition's close). */
  closeKit(): Promise<void>;
  logger: MinimalLogger;
  options: ResolvedShutdownOptions;
  server?: NodeServer | undefined;
  stop?: (() => unknown) | undefined;
}

/** Runs the shutdown sequence (module comment); never rejects. */
export async function shutdownSequence(deps: ShutdownDeps): Promise<ShutdownResult> {
  const { drain, logger, server, options } = deps;
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const requestsEnd = new AbortController();
  const endTimer = setTimeout(
    () => requestsEnd.abort(),
    options.deadlineMs - closeReserveMs(options.deadlineMs),
  );
  drain.begin();
  logger.info(
    { event: 'shutdown.draining', inFlight: drain.inFlight(), deadlineMs: options.deadlineMs },
    'shutting down: health answers 503 draining; finishing accepted requests',
  );
  // Sockets between requests learn nothing from a header: close them (again as they go idle).
  server?.closeIdleConnections();
  const idleSweep = server ? setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS) : 0;
  await sleep(options.keepListeningMs, requestsEnd.signal);
  server?.close();
  try {
    deps.stop?.();
  } catch (err) {
    logger.warn({ err }, 'stopping the server failed');
  }
  const drained = await drain.idle(requestsEnd.signal);
  clearTimeout(endTimer);
  clearInterval(idleSweep);
  const cut = drain.inFlight();
  if (!drained) {
    server?.closeAllConnections();
    logger.warn(
      { event: 'shutdown.cut', inFlight: cut, deadlineMs: options.deadlineMs },
      'shutdown deadline reached: requests still running were cut',
    );
  }
  const closed = await closeWithin(deps, options.deadlineMs - elapsed());
  const result = { drained, cut: drained ? 0 : cut, closed, elapsedMs: elapsed() };
  logger.info({ event: 'shutdown.done', ...result }, 'shut down');
  return result;
}

/** The kit's close, given at most `ms`; false when it failed or ran out of time. */
async function closeWithin(deps: ShutdownDeps, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), Math.max(0, ms));
  });
  const closing = deps.closeKit().then(
    () => true,
    (err: unknown) => {
      deps.logger.error({ err, event: 'shutdown.close_failed' }, 'closing the kit failed');
      return false;
    },
  );
  const closed = await Promise.race([closing, timeout]);
  clearTimeout(timer);
  if (!closed) {
    deps.logger.warn(
      { event: 'shutdown.close_timeout' },
      'the kit did not close before the shutdown deadline',
    );
  }
  return closed;
}

/** `kit.shutdownOnSignals(options)`. */
export interface ShutdownOnSignalsOptions extends ShutdownCallOptions {
  /** @default ['SIGTERM', 'SIGINT'] */
  signals?: readonly NodeJS.Signals[] | undefined;
  /**
   * Exit the process when the shutdown is done: code 0 when everything finished,
   * 1 when something was cut or the kit did not close. @default true
   */
  exit?: boolean | undefined;
}

/**
 * Starts the shutdown on the first of `signals` and exits when it is done; a
 * second signal exits at once (an operator's second Ctrl-C).
 */
export function onSignals(
  shutdown: () => Promise<ShutdownResult>,
  options: { signals: readonly NodeJS.Signals[]; exit: boolean; deadlineMs: number },
): () => void {
  let running: Promise<ShutdownResult> | undefined;
  const handler = () => {
    if (running) {
      if (options.exit) process.exit(1);
      return;
    }
    if (options.exit) {
      // Whatever hangs, the process is gone shortly after the deadline.
      setTimeout(() => process.exit(1), options.deadlineMs + 1_000).unref();
    }
    running = shutdown();
    void running.then((r) => {
      if (options.exit) process.exit(r.drained && r.closed ? 0 : 1);
    });
  };
  for (const signal of options.signals) process.on(signal, handler);
  return () => {
    for (const signal of options.signals) process.off(signal, handler);
  };
}
