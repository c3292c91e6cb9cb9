import { fileURLToPath } from 'node:url';
import express, { type ErrorRequestHandler, type Express } from 'express';
import { type StoreAppKit, type StoreAppOptionsWithoutAdapter, storeApp } from 'store-app-kit';
import { createNotesRepository, MAX_NOTE_LENGTH, migrateAppTables } from './db/notes.js';
import { productNotesFor } from './db/schema.js';
import { renderHomePage } from './views/home.js';

/** The folder of the page's script and styles (public/), beside src/ and dist/ alike. */
const PUBLIC_DIR = fileURLToPath(new URL('../public/', import.meta.url));

export interface App {
  app: Express;
  kit: StoreAppKit;
  close(): Promise<void>;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Cursors are opaque to us; this only keeps junk from being forwarded. */
const CURSOR = /^[A-Za-z0-9._~+/=-]{1,512}$/;
/** Products per page of the home page's table. */
export const PRODUCTS_PER_PAGE = 50;

class BadRequest extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Builds the app. Every setting comes from the environment (`.env`, or the
 * variables the tests set for their local platform) unless passed here.
 */
export async function createApp(options: StoreAppOptionsWithoutAdapter = {}): Promise<App> {
  // The purge needs the app's tables at creation, so the dialect is read from
  // the same DATABASE_URL the kit uses.
  const kit = await storeApp({
    ...options,
    storeScopedTables: [productNotesFor(kitDialect(options))],
    // For the load balancer or orchestrator: 200 while the database answers, 503 when not,
    // with { status } only. The detail (counts and codes, no store ids) needs
    // `Authorization: Bearer $STORE_APP_HEALTH_TOKEN`.
    health: options.health ?? { path: '/healthz' },
    // The page's script and styles are files of this origin: no inline code runs.
    securityHeaders: {
      // Every page and file of this app is the kit's app in the admin: all of them take the
      // kit's headers, not only the routes behind kit.authenticated().
      scope: 'app',
      helmet: { contentSecurityPolicy: { directives: { styleSrc: ["'self'"] } } },
      ...options.securityHeaders,
    },
  });
  await migrateAppTables(kit.db, kit.dialect);
  const notes = createNotesRepository(kit.db, kit.dialect);

  const app = express();
  app.disable('x-powered-by');
  // Install routes (/auth, /auth/callback), the webhook receiver (/webhooks), sessions, headers.
  app.use(kit.middleware());

  const api = express.Router();
  api.use(express.json({ limit: '16kb' }));
  api.use(kit.authenticated());

  // One page at a time, following the platform's cursor: a store with thousands
  // of products costs one request per page the merchant actually opens.
  api.get('/products', async (req, res) => {
    const cursor = req.query['cursor'];
    if (cursor !== undefined && (typeof cursor !== 'string' || !CURSOR.test(cursor))) {
      throw new BadRequest(
        422,
        'VALIDATION_ERROR',
        'cursor must be a cursor from a previous page.',
      );
    }
    const page = await res.locals.store.client.products.list({
      limit: PRODUCTS_PER_PAGE,
      ...(cursor ? { cursor } : {}),
    });
    res.json({
      data: page.data,
      nextCursor: page.pagination.hasMore ? page.pagination.nextCursor : null,
      total: page.pagination.total,
      perPage: PRODUCTS_PER_PAGE,
    });
  });

  api.get('/orders', async (_req, res) => {
    const page = await res.locals.store.client.orders.list({
      limit: 10,
      sort: 'created_at',
      order: 'desc',
    });
    res.json({ data: page.data });
  });

  api.get('/notes', async (_req, res) => {
    res.json({ data: await notes.list(res.locals.store.storeId) });
  });

  api.put('/products/:productId/note', async (req, res) => {
    const productId = String(req.params['productId']);
    if (!UUID.test(productId)) throw new BadRequest(404, 'NOT_FOUND', 'Unknown product.');
    const note: unknown = req.body?.note;
    if (typeof note !== 'string' || note.length > MAX_NOTE_LENGTH) {
      throw new BadRequest(
        422,
        'VALIDATION_ERROR',
        `note must be a string of at most ${MAX_NOTE_LENGTH} characters.`,
      );
    }
    const { storeId } = res.locals.store;
    if (note.trim() === '') {
      await notes.remove(storeId, productId);
      res.status(204).end();
      return;
    }
    res.json(await notes.save(storeId, productId, note));
  });

  // The example write against the platform: adjust a product's stock.
  api.post('/inventory', async (req, res) => {
    const { productId, increment } = (req.body ?? {}) as {
      productId?: unknown;
      increment?: unknown;
    };
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
    const { client } = res.locals.store;
    // A product with variants keeps stock per variant: adjust the first one.
    const before = await client.products.get(productId);
    const variantId = before.variants?.[0]?.id;
    await client.inventory.adjust(productId, increment, variantId ? { variantId } : {});
    const product = await client.products.get(productId);
    res.json({ productId, inventoryQuantity: product.inventoryQuantity });
  });

  app.use('/api', api);

  app.get('/', kit.authenticated(), async (_req, res) => {
    const { storeId, client } = res.locals.store;
    // The merchant knows their store by name. Reading it needs read_store_settings;
    // without that scope (or if the platform is slow to answer) the id stands in.
    const storeName = await client.store
      .current({ timeoutMs: 3000 })
      .then((s) => (typeof s.name === 'string' && s.name.trim() !== '' ? s.name : null))
      .catch(() => null);
    // The page carries a session token: never cache it.
    res.set('Cache-Control', 'no-store');
    res.type('html').send(
      renderHomePage({
        storeId,
        storeName,
        sessionToken: (await res.locals.store.sessionToken()).token,
      }),
    );
  });
  // The page's script and styles (after `/`: a static index.html must never answer the launch).
  app.use('/assets', express.static(PUBLIC_DIR, { index: false }));

  app.use(errorHandler);

  return {
    app,
    kit,
    async close() {
      await kit.close();
    },
  };
}

function kitDialect(options: StoreAppOptionsWithoutAdapter): 'sqlite' | 'postgres' | 'mysql' {
  const url = options.storage?.databaseUrl ?? process.env['DATABASE_URL'] ?? '';
  if (/^postgres(ql)?:\/\//.test(url)) return 'postgres';
  return /^(mysql|mariadb):\/\//.test(url) ? 'mysql' : 'sqlite';
}

/**
 * Bad input answers 4xx with `{code, message}`; errors from the platform keep
 * their status (404, 409, 422…); anything else is a 500 without details.
 */
const errorHandler: ErrorRequestHandler = function errorHandler(err, _req, res, _next) {
  const e = err as {
    status?: unknown;
    statusCode?: unknown;
    code?: unknown;
    message?: unknown;
    type?: unknown;
  };
  const status =
    typeof e.status === 'number' ? e.status : typeof e.statusCode === 'number' ? e.statusCode : 500;
  if (res.headersSent) return;
  if (status >= 400 && status < 500) {
    res.status(status).json({
      code:
        typeof e.code === 'string'
          ? e.code
          : e.type === 'entity.parse.failed'
            ? 'INVALID_JSON'
            : 'BAD_REQUEST',
      message: typeof e.message === 'string' ? e.message : 'Bad request.',
    });
    return;
  }
  console.error(err);
  res
    .status(status >= 500 && status < 600 ? status : 500)
    .json({ code: 'INTERNAL_ERROR', message: 'Something went wrong.' });
};
