/**
 * The newest response of each HTTP/1 connection, kept on its socket (a symbol of this
 * instance's own, one `close` listener per connection): what a shutdown needs to know
 * of requests in flight, at the cost of a property write per request. HTTP/1 answers a
 * connection's requests in order, so its newest response closes last: when draining
 * begins, the connections whose newest response is not closed are exactly those under
 * way, however many requests they pipelined. Each open connection keeps its last
 * response reachable until its next request or its close (Node's `keepAliveTimeout`,
 * 5 s, bounds an idle keep-alive one). Used by the watched server (`watchServer`) and
 * by `kit.middleware()` without one (src/shells/express/in-flight.ts).
 */
import type { Socket } from 'node:net';

/**
 * What became of a request: `noted` (its connection's newest), `gone` (its socket
 * closed before it was seen), `watch` (no HTTP/1 socket: HTTP/2's compatibility API,
 * whose streams share a socket and close in any order, or none; watch it one by one).
 */
export type Noting = 'noted' | 'gone' | 'watch';

export interface NewestResponses<R> {
  note(req: { socket?: Socket | null; httpVersionMajor: number }, res: R): Noting;
  /** Visits every noted connection with its newest response, then forgets them all. */
  takeAll(visit: (socket: Socket, res: R | undefined) => void): void;
}

export function newestResponses<R>(): NewestResponses<R> {
  // A key of this instance's own: two kits in one server each see every connection.
  const key = Symbol('storeApp.newestResponse');
  type Noted = Socket & { [key]?: R | undefined };
  const noted = new Set<Noted>();
  function forget(this: Noted): void {
    noted.delete(this);
    this[key] = undefined;
  }
  return {
    note(req, res) {
      const socket = req.socket as Noted | null | undefined;
      if (!socket || req.httpVersionMajor !== 1) return 'watch';
      if (socket.destroyed) return 'gone';
      if (socket[key] === undefined) {
        noted.add(socket);
        socket.on('close', forget);
      }
      socket[key] = res;
      return 'noted';
    },
    takeAll(visit) {
      for (const socket of noted) visit(socket, socket[key]);
      noted.clear();
    },
  };
}
