/**
 * The app's routes, on Hono, for the kit on Workers: the JSON API the embedded page
 * calls (products, orders, notes, an inventory write), the page itself and its assets.
 * The kit's own routes (install, callback, session token, webhooks, health) are answered
 * before a request gets here (`createWorker` in src/index.ts).
 */
import { type Context, Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { type StoreAppHonoEnv, storeAppHono } from 'store-app-kit/hono';
import type { WorkersStoreAppKit } from 'store-app-kit/workers';
import type { Env } from './env.js';
import { HOME_CSS, HOME_JS } from './generated/assets.js';
import { createNotesRepository, MAX_NOTE_LENGTH, notesDb } from './notes.js';
import { renderHomePage } from './views/home.js';

/** c.env: the Worker's bindings and variables; c.get('store'): behind hono.authenticated(). */
export type AppEnv = { Bindings: Env } & StoreAppHonoEnv;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Cursors are opaque to us; this only keeps junk from being forwarded. */
const CURSOR = /^[A-Za-z0-9._~+/=-]{1,512}$/;
/** Products per page of the home page's table. */
export const PRODUCTS_PER_PAGE = 50;
/** Largest JSON body the API reads. */
const MAX_BODY_BYTES = 16 * 1024;

class BadRequest extends Error {
  constructor(
    readonly status: 400 | 404 | 413 | 422,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** The request's JSON body, or a 400 naming the problem (never a 500). */
async function jsonBody(c: Context<AppEnv>): Promise<Record<string, unknown>> {
  const body: unknown = await c.req.json().catch(() => {
    throw new BadRequest(400, 'INVALID_JSON', 'The body must be JSON.');
  });
  return typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
}

/** The Hono app over one kit (one per isolate: `src/index.ts` builds it once). */
export function createApp(kit: WorkersStoreAppKit, env: Env): Hono<AppEnv> {
  const notes = createNotesRepository(notesDb(env.DB));
  const app = new Hono<AppEnv>();

  // The kit on Hono (store-app-kit/hono). hono.middleware() first: on every answer of the
  // app's routes, the kit's security headers, the set the kit's own routes get (CSP with
  // the admin's frame-ancestors, HSTS, nosniff, Referrer-Policy…; an API call with its
  // bearer token gets nosniff, HSTS and Vary: Authorization), added after the route as
  // kit.secureResponse adds them. Headers a route sets itself (the page's CSP) are kept.
  // It answers the kit's routes too, but createWorker has answered those before a request
  // gets here. The client's address is Cloudflare's cf-connecting-ip, as createWorker reads it.
  const hono = storeAppHono(kit, {
    remoteAddress: (request) => request.headers.get('cf-connecting-ip') ?? undefined,
  });
  app.use('*', hono.middleware());

  const api = new Hono<AppEnv>();
  // Every API route needs the store: its app session token (bearer), else the session
  // cookie. c.get('store') is the store; a refusal (401, re-authorise, 503) is answered.
  api.use('*', hono.authenticated());
  api.use(
    '*',
    bodyLimit({
      maxSize: MAX_BODY_BYTES,
      onError: (c) => c.json({ code: 'PAYLOAD_TOO_LARGE', message: 'The body is too large.' }, 413),
    }),
  );

  // One page at a time, following the platform's cursor.
  api.get('/products', async (c) => {
    const store = c.get('store');
    const cursors = c.req.queries('cursor');
    const cursor = cursors?.[0];
    if (cursors && (cursors.length !== 1 || !cursor || !CURSOR.test(cursor))) {
      throw new BadRequest(
        422,
        'VALIDATION_ERROR',
        'cursor must be a cursor from a previous page.',
      );
    }
    const page = await store.client.products.list({
      limit: PRODUCTS_PER_PAGE,
      ...(cursor ? { cursor } : {}),
    });
    return c.json({
      data: page.data,
      nextCursor: page.pagination.hasMore ? page.pagination.nextCursor : null,
      total: page.pagination.total,
      perPage: PRODUCTS_PER_PAGE,
    });
  });

  api.get('/orders', async (c) => {
    const store = c.get('store');
    const page = await store.client.orders.list({ limit: 10, sort: 'created_at', order: 'desc' });
    return c.json({ data: page.data });
  });

  api.get('/notes', async (c) => {
    const store = c.get('store');
    return c.json({ data: await notes.list(store.storeId) });
  });

  api.put('/products/:productId/note', async (c) => {
    const store = c.get('store');
    const productId = c.req.param('productId');
    if (!UUID.test(productId)) throw new BadRequest(404, 'NOT_FOUND', 'Unknown product.');
    const { note } = await jsonBody(c);
    if (typeof note !== 'string' || note.length > MAX_NOTE_LENGTH) {
      throw new BadRequest(
        422,
        'VALIDATION_ERROR',
        `note must be a string of at most ${MAX_NOTE_LENGTH} characters.`,
      );
    }
    if (note.trim() === '') {
      await notes.remove(store.storeId, productId);
      return c.body(null, 204);
    }
    return c.json(await notes.save(store.storeId, productId, note));
  });

  // The example write against the platform: adjust a product's stock.
  api.post('/inventory', async (c) => {
    const store = c.get('store');
    const { productId, increment } = await jsonBody(c);
    if (typeof productId !== 'string' || !UUID.test(productId)) {
      throw new BadRequest(422, 'VALIDATION_ERROR', 'productId must be a product id.');
    }
    if (
      typeof increment !== 'number' ||
      !Number.isInteger(increment) ||
      increment === 0 ||
      Math.abs(increment) > 1000
    ) {
      throw new BadRequest(
        422,
        'VALIDATION_ERROR',
        'increment must be a non-zero integer between -1000 and 1000.',
      );
    }
    // A product with variants keeps stock per variant: adjust the first one.
    const before = await store.client.products.get(productId);
    const variantId = before.variants?.[0]?.id;
    await store.client.inventory.adjust(productId, increment, variantId ? { variantId } : {});
    const product = await store.client.products.get(productId);
    return c.json({ productId, inventoryQuantity: product.inventoryQuantity });
  });

  app.route('/api', api);

  // The page the store admin opens in its iframe. kit.authenticate reads the admin's
  // launch token (answering a redirect that sets the session cookie), then the session
  // cookie; a merchant without a session is sent through the install.
  app.get('/', async (c) => {
    const store = await kit.authenticate(c.req.raw);
    if (store instanceof Response) return store;
    // The merchant knows their store by name (read_store_settings); else the id stands in.
    const storeName = await store.client.store
      .current({ timeoutMs: 3000 })
      .then((s) => (typeof s.name === 'string' && s.name.trim() !== '' ? s.name : null))
      .catch(() => null);
    // The page carries a session token: never cache it. No inline code runs.
    c.header('Cache-Control', 'no-store');
    c.header('X-Content-Type-Options', 'nosniff');
    // frame-ancestors: only the store admin may frame the page.
    const framing = kit.frameAncestors();
    c.header(
      'Content-Security-Policy',
      `default-src 'self'; script-src 'self'; style-src 'self'; object-src 'none'; base-uri 'self'${framing ? `; ${framing}` : ''}`,
    );
    return c.html(
      renderHomePage({
        storeId: store.storeId,
        storeName,
        sessionToken: (await store.sessionToken()).token,
      }),
    );
  });

  // The page's script (with store-app-kit/browser bundled in) and styles: no file system
  // on Workers, so they are strings in the Worker (scripts/build-assets.mjs).
  app.get('/assets/home.js', (c) =>
    c.body(HOME_JS, 200, { 'Content-Type': 'text/javascript; charset=utf-8' }),
  );
  app.get('/assets/home.css', (c) =>
    c.body(HOME_CSS, 200, { 'Content-Type': 'text/css; charset=utf-8' }),
  );

  app.onError((err, c) => {
    // Bad input answers 4xx with {code, message}; errors from the platform keep
    // their status (404, 409, 422…); anything else is a 500 without details.
    if (err instanceof BadRequest)
      return c.json({ code: err.code, message: err.message }, err.status);
    const e = err as { status?: unknown; code?: unknown; message?: unknown };
    if (typeof e.status === 'number' && e.status >= 400 && e.status < 500) {
      return c.json(
        {
          code: typeof e.code === 'string' ? e.code : 'BAD_REQUEST',
          message: typeof e.message === 'string' ? e.message : 'Bad request.',
        },
        e.status as 400,
      );
    }
    // A kit error with its own status (a 503 while D1 is unreachable) keeps it.
    if (typeof e.status === 'number' && e.status === 503) {
      return c.json({ code: 'UNAVAILABLE', message: 'Try again shortly.' }, 503);
    }
    console.error(err);
    return c.json({ code: 'INTERNAL_ERROR', message: 'Something went wrong.' }, 500);
  });

  return app;
}
