/**
 * The kit object's types (what `storeApp()` returns on each storage), shared
 * by Node's entry (src/kit.ts) and the Workers entry (src/workers/), and
 * re-exported by the package's entries.
 */
import type {
  MySqlDatabase as DrizzleMySqlDatabase,
  MySqlQueryResultHKT,
  PreparedQueryHKTBase,
} from 'drizzle-orm/mysql-core';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import type { BaseSQLiteDatabase } from 'drizzle-orm/sqlite-core';
import type { Logger } from 'pino';
import type { AuthenticatedStore } from '../authenticated/index.js';
import type { StoreApiClient } from '../client/index.js';
import type { StoreAppOptions } from '../config/index.js';
import type { GrantCheck } from '../grant/index.js';
import type { HealthReport } from '../health/index.js';
import type { PurgeFunction } from '../purge/index.js';
import type { AuthenticatedHandler, KitMiddleware } from '../shells/express/types.js';
import type { FetchHandler, FetchOptions } from '../shells/fetch/index.js';
import type {
  ShutdownCallOptions,
  ShutdownOnSignalsOptions,
  ShutdownResult,
} from '../shutdown/index.js';
import type { StorageAdapter } from '../storage/contract.js';
import type { Installation, PendingPurge, PurgeResult } from '../storage/types.js';
import type { WebhookRegistry } from '../webhooks/index.js';

export type {
  AuthenticatedHandler,
  AuthenticatedLocals,
  KitMiddleware,
} from '../shells/express/types.js';

export interface KitInstallations {
  /** The store's installation (tokens decrypted), or null when not installed. */
  get(storeId: string): Promise<Installation | null>;
  list(): Promise<Installation[]>;
  /** Delete everything held for the store (same as `kit.purge`). */
  delete(storeId: string): Promise<PurgeResult>;
  /** True when the store's installation has every scope the app is configured for. */
  hasRequiredScopes(installation: Installation): boolean;
}

/**
 * The kit's Drizzle handle on SQLite (better-sqlite3). Typed with Drizzle's
 * driver-neutral base class so that the kit's types never need
 * `@types/better-sqlite3` or `@types/pg`.
 */
export type SqliteDatabase = BaseSQLiteDatabase<'sync', unknown>;
/** The kit's Drizzle handle on Postgres (node-postgres). */
export type PostgresDatabase = PgDatabase<PgQueryResultHKT>;
/** The kit's Drizzle handle on MySQL / MariaDB (mysql2). */
export type MysqlDatabase = DrizzleMySqlDatabase<MySqlQueryResultHKT, PreparedQueryHKTBase>;

export interface StoreAppKitBase {
  /**
   * Express middleware to mount once, before your routes: request logger,
   * security headers, the webhook receiver, the session and the install routes.
   * Mount it before your own body parsers (after them only with
   * `express.json({ verify: keepRawBody })`: docs/webhooks.md); it parses no bodies itself.
   */
  middleware(): KitMiddleware;
  installations: KitInstallations;
  /** Handlers for platform events: `kit.webhooks.on('app.uninstalled', fn)`. */
  webhooks: WebhookRegistry;
  /** Delete everything held for a store (kit rows and your store-scoped tables). */
  purge: PurgeFunction;
  /**
   * Uninstall purges recorded but not done yet (the outbox; normally empty).
   * Each is retried with backoff until it succeeds, also after a restart.
   * Same list as `npx store-app purges`.
   */
  pendingPurges(): Promise<PendingPurge[]>;
  /**
   * Database reachability, pending purges and the last refresh failure, as
   * the `health.path` route reports them (reused for `health.cacheMs`). For an
   * app that mounts its own route behind its own guard.
   */
  health(): Promise<HealthReport>;
  /**
   * Middleware for app routes: finds the store (session or app session token),
   * sets `res.locals.store = { storeId, scopes, client, sessionToken }`, and sends
   * the merchant through the install when the app cannot act for the store.
   */
  authenticated(): AuthenticatedHandler;
  /**
   * The kit's routes on the Fetch API (Hono, Bun, Deno, Next.js): the install
   * begin and callback, the session-token swap, the webhook receiver and health
   * answer here (a kit path hit with another method: 405); null for any other
   * request (your routes). `options.remoteAddress`: the client's address, which
   * a `Request` does not carry (docs/runtimes.md).
   */
  fetch(request: Request, options?: FetchOptions): Promise<Response | null>;
  /**
   * `authenticated()` on the Fetch API: the store of a request (app session
   * token, the admin's launch, or the session cookie shared with Express) as
   * `{ storeId, scopes, client, sessionToken }`, or the `Response` to send
   * instead: a launch's redirect setting the session cookie, re-authorisation
   * (redirect, page in the admin's iframe, or 401 with the re-authorise
   * header), 403 for a cross-site write, 503, 500.
   */
  authenticate(request: Request, options?: FetchOptions): Promise<AuthenticatedStore | Response>;
  /**
   * Your route's `response` carrying the kit's security-header set (the set
   * `kit.authenticated()` routes get on Express: CSP with the admin's
   * `frame-ancestors`, HSTS, nosniff, Referrer-Policy, COOP…; a bearer request gets
   * nosniff, HSTS and `Vary: Authorization`). Headers your response already has are
   * kept. The headers are added in place and `response` is returned; a response whose
   * headers cannot change (from `fetch()`) comes back as a copy. Hono: after `next()`,
   * `const secured = kit.secureResponse(c.req.raw, c.res); if (secured !== c.res) c.res = secured;`
   * (Hono copies any Response assigned to `c.res`, its body through a stream).
   */
  secureResponse(request: Request, response: Response): Response;
  /**
   * The `frame-ancestors` CSP directive for pages you serve yourself outside
   * Express (Hono, Bun, Deno, Next.js), e.g. `frame-ancestors https://admin.example`;
   * undefined when the app sends its own framing headers (`securityHeaders`).
   */
  frameAncestors(): string | undefined;
  /** The typed API client of a store, for background jobs and scripts. */
  client(storeId: string): StoreApiClient;
  /**
   * Asks the platform's session check what the store's grant is, beside what the
   * kit stored (scopes, store). Every install is confirmed this way in the
   * background. A revoked grant is reported, never purged.
   */
  checkGrant(storeId: string): Promise<GrantCheck>;
  /**
   * An app session token (HS256 JWT) for the embedded frontend's `Authorization: Bearer`,
   * bound to the store's current installation (an uninstall ends it). Throws
   * `NotInstalledError` for a store that is not installed.
   */
  sessionToken(storeId: string): Promise<{ token: string; expiresAt: Date }>;
  /** The kit's logger (redacting); children per request are at `res.locals.log`. */
  logger: Logger;
  /**
   * Stops the instance without failing what it accepted (docs/operations.md):
   * health answers 503 "draining", answers carry `Connection: close` and idle
   * keep-alive sockets close, `server` (a Node `http.Server`) stops accepting
   * (or `stop()` on Bun and Deno), accepted requests and acknowledged webhook work
   * finish, background loops stop, storage closes; within `deadlineMs`
   * (`storeApp({ shutdown })`, default 8 s), after which what still runs is cut.
   * Resolves with what happened; calling it again returns the same promise.
   */
  shutdown(options?: ShutdownCallOptions): Promise<ShutdownResult>;
  /**
   * `kit.shutdown(options)` on SIGTERM and SIGINT, then `process.exit` (0, or 1
   * when something was cut). Call it when the server starts: from then on the
   * server's requests are counted in flight, and those under way when the
   * signal comes get `Connection: close` too. Returns a function that removes
   * the signal handlers. Not on Workers (no process, no signals).
   */
  shutdownOnSignals(options?: ShutdownOnSignalsOptions): () => void;
  /**
   * Your Fetch handler (Bun.serve, Deno.serve, Hono), counted in flight until it
   * returns its `Response`, so `kit.shutdown()` waits for it; while the kit
   * drains its answers carry `Connection: close`.
   * `Bun.serve({ fetch: kit.track(app.fetch) })`.
   */
  track<A extends unknown[]>(handler: FetchHandler<A>): FetchHandler<A>;
  /**
   * Stops background work and closes the database at once, whatever is in
   * flight: prefer `kit.shutdown()` for a running server.
   */
  close(): Promise<void>;
}

/** The kit on SQLite: `kit.dialect === 'sqlite'` narrows `kit.db`. */
export interface SqliteStoreAppKit extends StoreAppKitBase {
  /** The database chosen by `DATABASE_URL`. */
  dialect: 'sqlite';
  /** Drizzle handle on the kit's database for your own tables. */
  db: SqliteDatabase;
  /**
   * One transaction across the kit's tables and yours (kit calls made inside it join
   * it; a nested call is a savepoint). docs/storage.md, "Transactions and concurrency".
   */
  transaction<T>(fn: (tx: SqliteDatabase) => Promise<T>): Promise<T>;
}

/** The kit on Postgres: `kit.dialect === 'postgres'` narrows `kit.db`. */
export interface PostgresStoreAppKit extends StoreAppKitBase {
  /** The database chosen by `DATABASE_URL`. */
  dialect: 'postgres';
  /** Drizzle handle on the kit's database for your own tables. */
  db: PostgresDatabase;
  /**
   * One transaction across the kit's tables and yours (kit calls made inside it join
   * it; a nested call is a savepoint). docs/storage.md, "Transactions and concurrency".
   */
  transaction<T>(fn: (tx: PostgresDatabase) => Promise<T>): Promise<T>;
}

/** The kit on MySQL / MariaDB: `kit.dialect === 'mysql'` narrows `kit.db`. */
export interface MysqlStoreAppKit extends StoreAppKitBase {
  /** The database chosen by `DATABASE_URL`. */
  dialect: 'mysql';
  /** Drizzle handle on the kit's database for your own tables. */
  db: MysqlDatabase;
  /**
   * One transaction across the kit's tables and yours (kit calls made inside it join
   * it; a nested call is a savepoint). docs/storage.md, "Transactions and concurrency".
   */
  transaction<T>(fn: (tx: MysqlDatabase) => Promise<T>): Promise<T>;
}

/** The kit on the app's own StorageAdapter (`storage.adapter`): no Drizzle handle. */
export interface CustomStorageStoreAppKit extends StoreAppKitBase {
  dialect: 'custom';
  /** undefined: keep the app's tables in the adapter's own database. */
  db: undefined;
  /** Rejects with ConfigError: keep your tables in the adapter's own database and its transactions. */
  transaction(fn: (tx: never) => Promise<unknown>): Promise<never>;
}

/**
 * What `storeApp()` returns on the built-in storage. The dialect is only known
 * at run time (from `DATABASE_URL`), so `kit.db` is typed once you check
 * `kit.dialect`. With `storage.adapter`, `storeApp()` returns a
 * CustomStorageStoreAppKit instead.
 */
export type StoreAppKit = SqliteStoreAppKit | PostgresStoreAppKit | MysqlStoreAppKit;

/** `storeApp()` options that name the app's own StorageAdapter. */
export type StoreAppOptionsWithAdapter = StoreAppOptions & {
  storage: { adapter: StorageAdapter };
};

/** `storeApp()` options on the built-in storage (no `storage.adapter`). */
export type StoreAppOptionsWithoutAdapter = StoreAppOptions & {
  storage?: { adapter?: undefined };
};
