/**
 * Finds a body parser mounted before `kit.middleware()` that would consume webhook
 * bodies and keep no raw copy (a global `express.json()` before the kit), on the
 * first request of any kind, so the message naming the fix is logged when the app
 * starts serving, not at the first uninstall (issue 32).
 *
 * Express 5 keeps the app's layers on `req.app.router.stack`. Every body-parser
 * layer before the kit's own that matches the webhook path is run once against a
 * request of our own making (a small JSON body on a stream, never a real request),
 * and what it did is read back: the body consumed and no raw bytes kept
 * (`keepRawBody`'s `req.rawBody`, or `express.raw()`'s Buffer) is the mistake;
 * `express.json({ verify: keepRawBody })` is not. Nothing of the app is changed.
 * Parsers inside a router of the app are not looked into; the receiver still
 * answers such a delivery 503 `WEBHOOK_BODY_CONSUMED` with the same message.
 */
import { Readable } from 'node:stream';
import type { Request } from 'express';
import type { Logger } from 'pino';
import { WEBHOOK_BODY_CONSUMED } from '../../webhooks/errors.js';
import { BODY_ALREADY_CONSUMED_FIX } from '../../webhooks/pipeline.js';

/** body-parser's handler names (`express.json()`, `.urlencoded()`, `.text()`, `.raw()`). */
const PARSERS: ReadonlySet<string> = new Set([
  'jsonParser',
  'urlencodedParser',
  'textParser',
  'rawParser',
]);
/** A parser that neither calls next nor reads within this is left alone. */
const PROBE_TIMEOUT_MS = 1000;

/** What the check reads of a router layer (Express 5's `router` package). */
interface LayerLike {
  handle: unknown;
  name?: string;
  route?: unknown;
  slash?: boolean;
  matchers?: ((path: string) => unknown)[];
}

type Handler = (req: unknown, res: unknown, next: (err?: unknown) => void) => void;

/** Whether `layer` (a `use()` layer) would run for `path`, read without touching its state. */
function runsFor(layer: LayerLike, path: string): boolean {
  if (layer.route !== undefined) return false;
  if (layer.slash) return true;
  return (layer.matchers ?? []).some((m) => Boolean(m(path)));
}

/** Runs `handle` on a made-up JSON delivery; true when it consumed the body and kept no copy. */
function consumesWithoutCopy(handle: Handler, path: string): Promise<boolean> {
  const bytes = Buffer.from('{"type":"app.uninstalled"}');
  const probe = Object.assign(
    new Readable({
      read() {
        this.push(bytes);
        this.push(null);
      },
    }),
    {
      method: 'POST',
      url: path,
      headers: { 'content-type': 'application/json', 'content-length': String(bytes.length) },
      complete: false,
      socket: { readable: true },
    },
  ) as Readable & { body?: unknown; rawBody?: unknown };
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), PROBE_TIMEOUT_MS);
    timer.unref();
    const done = () => {
      clearTimeout(timer);
      const kept =
        probe.rawBody instanceof Uint8Array ||
        typeof probe.rawBody === 'string' ||
        Buffer.isBuffer(probe.body);
      const consumed = probe.readableEnded || probe.body !== undefined;
      resolve(consumed && !kept);
    };
    try {
      handle(probe, {}, done);
    } catch {
      done();
    }
  });
}

/** The names of the parsers before `kit` in the app's stack that would consume webhook bodies. */
async function consumingParsers(req: Request, kit: unknown, webhookPath: string) {
  const stack = (req.app as unknown as { router?: { stack?: LayerLike[] } }).router?.stack;
  if (!Array.isArray(stack)) return [];
  const at = stack.findIndex((l) => l.handle === kit);
  if (at < 0) return [];
  const path = req.baseUrl + webhookPath;
  const found: string[] = [];
  for (const layer of stack.slice(0, at)) {
    const name = layer.name ?? '';
    if (!PARSERS.has(name) || typeof layer.handle !== 'function' || !runsFor(layer, path)) {
      continue;
    }
    if (await consumesWithoutCopy(layer.handle as Handler, path)) found.push(name);
  }
  return found;
}

/**
 * The check, run once on the first request passing the kit's layer (`kit`: the
 * kit's router); undefined when the app has no webhook route.
 */
export function parserCheck(
  webhookPath: string | undefined,
  kit: unknown,
  logger: Pick<Logger, 'error'>,
): ((req: Request) => void) | undefined {
  if (webhookPath === undefined) return undefined;
  let checked = false;
  return function storeAppParserCheck(req) {
    if (checked) return;
    checked = true;
    consumingParsers(req, kit, webhookPath).then(
      (parsers) => {
        if (parsers.length === 0) return;
        logger.error(
          { errorCode: WEBHOOK_BODY_CONSUMED, path: req.baseUrl + webhookPath, parsers },
          `webhooks: ${BODY_ALREADY_CONSUMED_FIX}`,
        );
      },
      () => {},
    );
  };
}
