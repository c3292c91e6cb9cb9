/**
 * An express-session store on the storage adapter's session operations
 * (never MemoryStore): sessions live in the app's database, shared by every
 * instance. A storage failure reaches express-session as a StorageError,
 * never as "no session" (which would silently log the merchant out).
 */
import type { SessionData } from 'express-session';
import session from 'express-session';
import type { Logger } from 'pino';
import type { SessionAdapter, SessionRecord } from './contract.js';
import type { SessionStoreOptions } from './types.js';

const DEFAULT_TTL_MS = 86_400_000;
const DEFAULT_PRUNE_INTERVAL_MS = 900_000;

type Callback<T = void> = (err?: unknown, value?: T) => void;

export class AdapterSessionStore extends session.Store {
  readonly #sessions: SessionAdapter;
  readonly #ttlMs: number;
  readonly #logger: Logger | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(sessions: SessionAdapter, options: SessionStoreOptions = {}, logger?: Logger) {
    super();
    this.#sessions = sessions;
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

  #record(sess: SessionData): SessionRecord {
    const storeId = (sess as { storeId?: unknown }).storeId;
    return {
      storeId: typeof storeId === 'string' ? storeId : null,
      // JSON-safe (cookie Dates become strings), as any database would keep it.
      data: JSON.parse(JSON.stringify(sess)) as Record<string, unknown>,
      expiresAt: this.#expiry(sess),
    };
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
    this.#settle(
      this.#sessions
        .get(sid, new Date())
        .then((record) => (record ? (record.data as unknown as SessionData) : null)),
      cb,
    );
  }

  override set(sid: string, sess: SessionData, cb?: Callback): void {
    this.#settle(this.#sessions.set(sid, this.#record(sess)), cb);
  }

  override touch(sid: string, sess: SessionData, cb?: Callback): void {
    this.#settle(this.#sessions.touch(sid, this.#record(sess)), cb);
  }

  override destroy(sid: string, cb?: Callback): void {
    this.#settle(this.#sessions.destroy(sid), cb);
  }

  /** Deletes expired sessions now. Returns how many. */
  prune(now: Date = new Date()): Promise<number> {
    return this.#sessions.prune(now);
  }

  /** Stops the prune timer (Storage.close() calls it). */
  close(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
