/**
 * `keepRawBody`, apart from the receiver, so the main entry exports it
 * without loading the receiver and its telemetry.
 */
import type { IncomingMessage } from 'node:http';

/** Where a body parser may leave the raw bytes; `keepRawBody` sets it. */
export interface WithRawBody {
  rawBody?: unknown;
}

/**
 * Pass as `express.json({ verify: keepRawBody })` when that parser must run
 * before `kit.middleware()`: it keeps the exact bytes the signature covers.
 */
export function keepRawBody(req: IncomingMessage, _res: unknown, buf: Buffer): void {
  (req as IncomingMessage & WithRawBody).rawBody = buf;
}
