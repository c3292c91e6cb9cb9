/**
 * Requests under way on the Express shell, for a shutdown (src/shutdown/): each counts
 * in flight until its response closes, and those whose headers are not sent when
 * draining begins say `Connection: close` (later ones say it from the start), on each
 * connection's newest answer only (src/shutdown/closing-connection.ts). A server the
 * kit watches (`shutdownOnSignals({ server })`) does all of it for every request, and
 * this census then notes nothing.
 *
 * Counted lazily on HTTP/1.x: until draining begins the kit only notes each
 * connection's newest response (src/shutdown/newest-responses.ts), and when it begins
 * counts those not closed and listens for their close (the log's `inFlight` then
 * counts a connection once, however many requests it pipelined). A `close` listener
 * and a map entry on every response cost ~3 µs of each request on the route bench
 * (issue 31). Anything else (HTTP/2's compatibility API, a request without a socket,
 * every request once draining) is counted as it arrives.
 */
import type { Request, Response } from 'express';
import type { Drain } from '../../core/drain.js';
import { closeConnectionAfter } from '../../shutdown/closing-connection.js';
import { newestResponses } from '../../shutdown/newest-responses.js';

/** Notes each request that passes the kit (idempotent per response: the kit may be mounted twice). */
export type InFlightNote = (req: Request, res: Response) => void;

/** The in-flight census of one Express shell over the composition's drain state. */
export function inFlightCensus(drain: Drain): InFlightNote {
  const newest = newestResponses<Response>();
  /** Responses watched one by one, each with whether `countRequest` counted it. */
  const open = new Map<Response, boolean>();

  function responseClosed(this: Response): void {
    const counted = open.get(this);
    if (counted === undefined) return;
    open.delete(this);
    if (counted) drain.leaveRequest();
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
    newest.takeAll((_socket, res) => {
      if (res !== undefined) watch(res);
    });
    for (const res of open.keys()) closeConnectionAfter(res);
  });

  return function noteInFlight(req, res) {
    // A watched server notes, counts and marks every request itself (src/shutdown/index.ts).
    if (drain.countedByServer()) return;
    // A socket gone before the kit saw its request: nothing of it is under way.
    if (!drain.draining() && newest.note(req, res) !== 'watch') return;
    watch(res);
    // Draining: the client's next request goes over a new connection, to another instance.
    if (drain.draining()) closeConnectionAfter(res);
  };
}
