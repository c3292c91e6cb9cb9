/**
 * The session-store port: where browser sessions live, by id, with a lifetime. The
 * built-in storage implements it (`storage.sessions()`: the sessions table); an
 * app's own store (`session.store`, an express-session-style store such as Redis)
 * is adapted to it by `fromCallbackStore`. Both shells read and write it through the
 * kit's browser session (./browser-session.ts), so the kit never needs express-session.
 *
 * A session's data is a JSON object in express-session's format (`cookie`,
 * `storeId`, `authAt`), so a session started by either shell is read by both.
 */

/** A session's data as stored (express-session's shape: `cookie`, then the app's fields). */
export type StoredSession = Record<string, unknown>;

export interface KitSessionStore {
  /** The session, or null when there is none or it has expired. */
  get(sid: string): Promise<StoredSession | null>;
  /**
   * Stores the session for `ttlMs` from now (the store's default lifetime when
   * undefined; a negative one stores it already expired).
   */
  set(sid: string, data: StoredSession, ttlMs?: number): Promise<void>;
  /** Extends a session's lifetime (and data), when the store can do it cheaply. */
  touch?(sid: string, data: StoredSession, ttlMs?: number): Promise<void>;
  destroy(sid: string): Promise<void>;
}

type Callback<T = unknown> = (err?: unknown, value?: T) => void;

/**
 * An express-session-style store: callback `get`, `set`, `destroy` (connect-redis,
 * connect-pg-simple, MemoryStore…). Structural: the kit never loads express-session
 * to accept one.
 */
export interface CallbackSessionStore {
  // biome-ignore lint/suspicious/noExplicitAny: express-session's own signatures take any.
  get(sid: string, callback: (err: any, session?: any) => void): void;
  // biome-ignore lint/suspicious/noExplicitAny: express-session's own signatures take any.
  set(sid: string, session: any, callback?: (err?: any) => void): void;
  // biome-ignore lint/suspicious/noExplicitAny: express-session's own signatures take any.
  destroy(sid: string, callback?: (err?: any) => void): void;
}

function call<T>(fn: (cb: Callback<T>) => void): Promise<T | undefined> {
  return new Promise((resolve, reject) => fn((err, v) => (err ? reject(err) : resolve(v))));
}

/**
 * An app's express-session-style store as a `KitSessionStore`. Such a store reads a
 * session's lifetime from its `cookie` (which the kit's sessions carry), so `ttlMs`
 * is not passed on.
 */
export function fromCallbackStore(store: CallbackSessionStore): KitSessionStore {
  return {
    async get(sid) {
      return ((await call<StoredSession | null>((cb) => store.get(sid, cb))) ??
        null) as StoredSession | null;
    },
    async set(sid, data) {
      await call((cb) => store.set(sid, data, cb));
    },
    async destroy(sid) {
      await call((cb) => store.destroy(sid, cb));
    },
  };
}

/**
 * The start-up warning for an app-configured MemoryStore outside development and
 * test: it forgets every session on restart, grows without bound, and is not shared
 * by a second instance (merchants bounce between install loops). Told by its class
 * name, so the app's own copy of express-session counts too.
 */
export function memoryStoreWarning(
  store: object | undefined,
  environment: string,
): string | undefined {
  if (store === undefined || environment === 'development' || environment === 'test') {
    return undefined;
  }
  if (store.constructor?.name !== 'MemoryStore') return undefined;
  return (
    'session.store is a MemoryStore: sessions vanish on restart and are not shared by ' +
    'instances. Remove session.store to keep sessions in the storage adapter (the database), ' +
    'or pass a persistent express-session store.'
  );
}
