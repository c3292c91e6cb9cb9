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
import type { Socket } from 'node:net';
import type { Drain } from '../core/drain.js';
import type { MinimalLogger } from '../core/logger.js';
import { parseOptions } from '../options/index.js';
import { closeConnectionAfter } from './closing-connection.js';
import { newestResponses } from './newest-responses.js';
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
  getConnections(callback: (err: Error | null, count: number) => void): unknown;
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

/** Servers the kit watches, and how each closes its kept-alive sockets once it stops listening. */
const watched = new WeakMap<object, { stopListening(): void }>();

/**
 * Watches a Node server's requests from now on: each counts as in flight until
 * its response closes, and those whose headers are not sent when draining begins
 * get `Connection: close` (later ones get it from the start). While the server
 * still listens (`keepListeningMs`), a kept-alive socket stays open: its next
 * request is answered, with `Connection: close`. Once it stops listening, a
 * socket that served a request is closed as soon as it is idle. A connection that
 * never sent a byte is left alone (closing it could reset a request on its way;
 * the deadline ends it).
 *
 * Until draining begins, an HTTP/1 request costs a property write: only each
 * connection's newest response is noted (./newest-responses.ts), and when draining
 * begins those not closed are counted and watched, and only they get `Connection:
 * close`, never an earlier answer pipelined before them, which Node would send as
 * the connection's last. The same holds for requests arriving while draining: the
 * mark stays on each connection's newest answer (./closing-connection.ts; HTTP/2
 * sessions are closed gracefully instead). HTTP/2's compatibility API, and every
 * request once draining, are watched one by one.
 */
export function watchServer(server: NodeServer, drain: Drain): void {
  if (watched.has(server)) return;
  // Every request of the server is counted here; the shells stop counting theirs.
  drain.serverCounts();
  const newest = newestResponses<ServerResponse>();
  /** Responses watched one by one that draining has not seen begin yet. */
  const live = new Set<ServerResponse>();
  /** Sockets whose responses are watched, and how many of those are not closed yet. */
  const sockets = new Map<Socket, number>();
  let stopped = false;
  function dropSocket(this: Socket): void {
    sockets.delete(this);
  }
  /** `socket` among those whose responses are watched (closed once idle after the stop). */
  function track(socket: Socket): void {
    if (sockets.has(socket)) return;
    sockets.set(socket, 0);
    socket.once('close', dropSocket);
  }
  /** `res` counted in flight until it closes, its socket closed then once the server stopped. */
  function watch(res: ServerResponse, socket: Socket): void {
    // Closed already (its socket went first): nothing to wait for, and no close to come.
    if (res.closed) return;
    const leave = drain.enter();
    track(socket);
    sockets.set(socket, (sockets.get(socket) ?? 0) + 1);
    if (drain.draining()) closeConnectionAfter(res);
    else live.add(res);
    res.once('close', () => {
      live.delete(res);
      const left = (sockets.get(socket) ?? 1) - 1;
      sockets.set(socket, left);
      // Its answer went out kept alive before draining began: nothing more may come on it.
      if (left === 0 && stopped) socket.destroySoon();
      leave();
    });
  }
  watched.set(server, {
    stopListening() {
      stopped = true;
      for (const [socket, open] of sockets) if (open === 0) socket.destroySoon();
    },
  });
  drain.onBegin(() => {
    for (const res of live) closeConnectionAfter(res);
    live.clear();
    // The census: from now on each noted connection is watched as the others are.
    newest.takeAll((socket, res) => {
      track(socket);
      if (res !== undefined) watch(res, socket);
    });
  });
  server.prependListener('request', function storeAppInFlight(req, res) {
    if (!drain.draining() && newest.note(req, res) === 'noted') return;
    watch(res, req.socket);
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
  await sleep(options.keepListeningMs, requestsEnd.signal);
  // Stop accepting; Node closes the sockets idle between requests (a header cannot
  // reach them). A watched server closes the others as they go idle; another is swept.
  server?.close();
  const watcher = server ? watched.get(server) : undefined;
  watcher?.stopListening();
  const sweep = server && !watcher ? server : undefined;
  const idleSweep = sweep
    ? setInterval(() => sweep.closeIdleConnections(), IDLE_SWEEP_MS)
    : undefined;
  try {
    deps.stop?.();
  } catch (err) {
    logger.warn({ err }, 'stopping the server failed');
  }
  const drained = await settled(deps, requestsEnd.signal);
  clearTimeout(endTimer);
  clearInterval(idleSweep);
  const cut = drain.inFlight();
  // What is left: requests cut at the deadline, or connections that never sent a byte.
  server?.closeAllConnections();
  if (!drained) {
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

/** How often the server's open connections are counted while they close. */
const CONNECTIONS_POLL_MS = 20;

function connectionCount(server: NodeServer): Promise<number> {
  return new Promise((resolve) => server.getConnections((err, n) => resolve(err ? 0 : n)));
}

/**
 * Resolves true once nothing is in flight and the server has no connection left
 * (a connection accepted just before the listener closed may carry a request not
 * parsed yet); false when `signal` (the deadline) comes first with requests in
 * flight. A connection that never sends a byte only holds it to the deadline.
 */
async function settled(deps: ShutdownDeps, signal: AbortSignal): Promise<boolean> {
  const { drain, server } = deps;
  for (;;) {
    if (!(await drain.idle(signal))) return false;
    if (!server || (await connectionCount(server)) === 0) return true;
    await sleep(CONNECTIONS_POLL_MS, signal);
    if (signal.aborted) return drain.inFlight() === 0;
  }
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
