/**
 * An express-session store on the kit's sessions table (never MemoryStore).
 * Rows carry the session's store id so a purge can delete a store's sessions.
 * A database failure reaches express-session as a StorageError, never as "no
 * session" (which would silently log the merchant out or start a new session).
 */
import { and, count, eq, gt, lte } from 'drizzle-orm';
import type { SessionData } from 'express-session';
import session from 'express-session';
import type { Logger } from 'pino';
import type { DialectAdapter } from './adapter.js';
import { mysqlUpsert } from './mysql-statements.js';
import type { SessionStoreOptions } from './types.js';

const DEFAULT_TTL_MS = 86_400_000;
const DEFAULT_PRUNE_INTERVAL_MS = 900_000;

type Callback<T = void> = (err?: unknown, value?: T) => void;

export class DrizzleSessionStore extends session.Store {
  readonly #adapter: DialectAdapter;
  readonly #ttlMs: number;
  readonly #logger: Logger | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(adapter: DialectAdapter, options: SessionStoreOptions = {}, logger?: Logger) {
    super();
    this.#adapter = adapter;
    this.#logger = logger;
    this.#ttlMs = options.defaultTtlMs ?? DEFAULT_TTL_MS;
    const interval = options.pruneIntervalMs ?? DEFAULT_PRUNE_INTERVAL_MS;
    if (interval > 0) {
      this.#timer = setInterval(() => {
        // Housekeeping only: a failed prune is retried next tick. An 'error'
        // event with no listener would crash the app, so only emit when heard.
        this.prune().catch((err: unknown) => {
          this.#logger?.warn({ err: (err as Error).message }, 'session prune failed');
          if (this.listenerCount('error') > 0) this.emit('error', err);
        });
      }, interval);
      // The prune timer alone must not keep the process alive.
      this.#timer.unref();
    }
  }

  #expiry(sess: SessionData): Date {
    const cookie = sess.cookie as
      | { expires?: Date | string | null; maxAge?: number | null }
      | undefined;
    const expires = cookie?.expires;
    if (expires) {
      const at = new Date(expires);
      if (!Number.isNaN(at.getTime())) return at;
    }
    if (typeof cookie?.maxAge === 'number') return new Date(Date.now() + cookie.maxAge);
    return new Date(Date.now() + this.#ttlMs);
  }

  #settle<T>(promise: Promise<T>, cb: Callback<T> | undefined): void {
    promise.then(
      (value) => cb?.(null, value),
      (err: unknown) => cb?.(err),
    );
  }

  override get(sid: string, cb: Callback<SessionData | null>): void {
    const t = this.#adapter.tables.sessions;
    this.#settle(
      this.#adapter
        .run('reading a session', (db) =>
          db
            .select({ data: t.data })
            .from(t)
            .where(and(eq(t.sid, sid), gt(t.expiresAt, new Date())))
            .limit(1),
        )
        .then((rows) => (rows[0] ? (rows[0].data as SessionData) : null)),
      cb,
    );
  }

  override set(sid: string, sess: SessionData, cb?: Callback): void {
    const t = this.#adapter.tables.sessions;
    const storeId = (sess as { storeId?: unknown }).storeId;
    const values = {
      storeId: typeof storeId === 'string' ? storeId : null,
      data: JSON.parse(JSON.stringify(sess)) as unknown,
      expiresAt: this.#expiry(sess),
    };
    this.#settle(
      this.#adapter
        .run('storing a session', async (db) => {
          if (this.#adapter.dialect === 'mysql') {
            await mysqlUpsert(db, t, { sid, ...values }, values);
          } else {
            await db
              .insert(t)
              .values({ sid, ...values })
              .onConflictDoUpdate({ target: t.sid, set: values });
          }
        })
        .then(() => undefined),
      cb,
    );
  }

  override touch(sid: string, sess: SessionData, cb?: Callback): void {
    const t = this.#adapter.tables.sessions;
    const values = {
      data: JSON.parse(JSON.stringify(sess)) as unknown,
      expiresAt: this.#expiry(sess),
    };
    this.#settle(
      this.#adapter
        .run('touching a session', (db) => db.update(t).set(values).where(eq(t.sid, sid)))
        .then(() => undefined),
      cb,
    );
  }

  override destroy(sid: string, cb?: Callback): void {
    const t = this.#adapter.tables.sessions;
    this.#settle(
      this.#adapter
        .run('deleting a session', (db) => db.delete(t).where(eq(t.sid, sid)))
        .then(() => undefined),
      cb,
    );
  }

  override clear(cb?: Callback): void {
    const t = this.#adapter.tables.sessions;
    this.#settle(
      this.#adapter.run('clearing sessions', (db) => db.delete(t)).then(() => undefined),
      cb,
    );
  }

  override length(cb: Callback<number>): void {
    const t = this.#adapter.tables.sessions;
    this.#settle(
      this.#adapter
        .run('counting sessions', (db) =>
          db.select({ n: count() }).from(t).where(gt(t.expiresAt, new Date())),
        )
        .then((rows) => Number(rows[0]?.n ?? 0)),
      cb,
    );
  }

  /** Deletes expired sessions now. Returns how many. */
  async prune(now: Date = new Date()): Promise<number> {
    const t = this.#adapter.tables.sessions;
    const result = await this.#adapter.run('pruning expired sessions', (db) =>
      db.delete(t).where(lte(t.expiresAt, now)),
    );
    return this.#adapter.affected(result);
  }

  /** Stops the prune timer (Storage.close() calls it). */
  close(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
