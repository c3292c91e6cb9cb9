/**
 * While draining, each answer tells its client to take the next request elsewhere (to
 * an instance that is not shutting down). On HTTP/1 that is `Connection: close`, and
 * Node sends an answer so marked as its connection's last: the answers pipelined behind
 * it are dropped, though their handlers ran. So the mark is kept on the connection's
 * newest answer only: when a later request arrives on the connection before the marked
 * answer's head is written, the mark moves to the later one (the earlier answer goes
 * out without a `Connection` header, kept alive as Node would keep it). A head already
 * written cannot be changed: what was pipelined behind it is lost, as it would be
 * without the kit. HTTP/2 has no connection header (Node's compatibility API drops one
 * with a warning): the session is closed gracefully instead (a GOAWAY: its streams
 * finish, no new one starts).
 */
import type { Socket } from 'node:net';

/** The answer that carries `Connection: close` on its socket (one per socket, shared by every kit). */
const MARKED = Symbol.for('store-app-kit.closingAnswer');

interface ClosableAnswer {
  /** The request answered (Node's `res.req`, on HTTP/1 and HTTP/2's compatibility API). */
  readonly req: { readonly httpVersionMajor: number; readonly socket?: Socket | null };
  readonly headersSent: boolean;
  setHeader(name: string, value: string): unknown;
  removeHeader(name: string): void;
  /** HTTP/2's compatibility API: the stream, and its session. */
  readonly stream?: { readonly session?: { readonly closed: boolean; close(): void } | undefined };
}

type MarkedSocket = Socket & { [MARKED]?: ClosableAnswer | undefined };

/**
 * Marks `res` as its connection's last: `Connection: close` on HTTP/1, taken off the
 * earlier answer of the same connection that carried it; a graceful close of the
 * session on HTTP/2.
 */
export function closeConnectionAfter(res: ClosableAnswer): void {
  const req = res.req;
  if (req.httpVersionMajor >= 2) {
    const session = res.stream?.session;
    if (session !== undefined && !session.closed) session.close();
    return;
  }
  if (res.headersSent) return;
  const socket = req.socket as MarkedSocket | null | undefined;
  if (socket) {
    const earlier = socket[MARKED];
    if (earlier !== undefined && earlier !== res && !earlier.headersSent) {
      earlier.removeHeader('connection');
    }
    socket[MARKED] = res;
  }
  res.setHeader('connection', 'close');
}
