/**
 * Requests under way on the Express shell, for a shutdown (src/shutdown/): each counts
 * in flight until its response closes, and those whose headers are not sent when
 * draining begins say `Connection: close` (later ones say it from the start).
 *
 * Counted lazily on HTTP/1.x. A response is not watched while nothing drains: the
 * kit keeps the newest response it saw on each socket (a symbol on the socket, one
 * `close` listener per connection), and when draining begins it counts those not
 * closed yet and listens for their close. HTTP/1 answers a connection's requests in
 * order, so the newest response on a socket closes last: "not closed" is exact for
 * the connection, however many requests it pipelined (the log's `inFlight` then
 * counts the connection once). A `close` listener and a map entry on every response
 * cost ~3 µs of each request on the route bench (issue 31); this costs a property
 * write. What it holds: each open connection keeps its last response (and request)
 * reachable until its next request or its close, which Node's `keepAliveTimeout`
 * (5 s) bounds on an idle keep-alive connection.
 *
 * Anything else (HTTP/2's compatibility API, whose streams share a socket and close
 * in any order; a request without a socket; every request once draining) is counted
 * as it arrives, as before.
 */
import type { Socket } from 'node:net';
import type { Request, Response } from 'express';
import type { Drain } from '../../core/drain.js';

/** A socket with the newest response one census saw on it, under that census's own key. */
type WatchedSocket = Socket & { [latest: symbol]: Response | undefined };

/** Notes each request that passes the kit (idempotent per response: the kit may be mounted twice). */
export type InFlightNote = (req: Request, res: Response) => void;

/** The in-flight census of one Express shell over the composition's drain state. */
export function inFlightCensus(drain: Drain): InFlightNote {
  // A key of this census's own: two kits in one server each see every connection.
  const LATEST = Symbol('storeApp.latestResponse');
  /** Responses watched one by one, each with whether `countRequest` counted it. */
  const open = new Map<Response, boolean>();
  /** Sockets whose newest response is kept (HTTP/1, before draining). */
  const sockets = new Set<WatchedSocket>();

  function responseClosed(this: Response): void {
    const counted = open.get(this);
    if (counted === undefined) return;
    open.delete(this);
    if (counted) drain.leaveRequest();
  }
  function socketClosed(this: WatchedSocket): void {
    sockets.delete(this);
    this[LATEST] = undefined;
  }
  /** From now on `res` is watched: counted in flight until it closes. */
  function watch(res: Response): void {
    // Closed already (its socket went first): nothing to wait for, and no close to come.
    if (res.closed || open.has(res)) return;
    open.set(res, drain.countRequest());
    res.on('close', responseClosed);
  }

  drain.onBegin(() => {
    // The census: each connection's newest response not closed yet is under way.
    for (const socket of sockets) {
      const res = socket[LATEST];
      if (res !== undefined && !res.closed) watch(res);
    }
    sockets.clear();
    for (const res of open.keys()) if (!res.headersSent) res.setHeader('connection', 'close');
  });

  return function noteInFlight(req, res) {
    const socket = req.socket as WatchedSocket | undefined;
    if (socket !== undefined && req.httpVersionMajor === 1 && !drain.draining()) {
      // A socket gone before the kit saw its request: nothing of it is under way.
      if (socket.destroyed) return;
      if (socket[LATEST] === undefined) {
        sockets.add(socket);
        socket.on('close', socketClosed);
      }
      socket[LATEST] = res;
      return;
    }
    watch(res);
    // Draining: the client's next request goes over a new connection, to another instance.
    if (drain.draining() && !res.headersSent) res.setHeader('connection', 'close');
  };
}
