/**
 * The kit's session store (`KitSessionStore`, src/core/session-store.ts) on the
 * storage adapter's session operations (never MemoryStore): sessions live in the
 * app's database, shared by every instance. A storage failure rejects as a
 * StorageError, never as "no session" (which would silently log the merchant out).
 * Both shells use it through the kit's browser session (src/core/browser-session.ts).
 */
import type { Logger } from 'pino';
import type { KitSessionStore, StoredSession } from '../core/session-store.js';
import { unref } from '../core/timers.js';
import type { SessionAdapter, SessionRecord } from './contract.js';
import type { SessionStoreOptions } from './types.js';

const DEFAULT_TTL_MS = 86_400_000;
const DEFAULT_PRUNE_INTERVAL_MS = 900_000;

export class AdapterSessionStore implements KitSessionStore {
  readonly #sessions: SessionAdapter;
  readonly #ttlMs: number;
  readonly #logger: Logger | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(sessions: SessionAdapter, options: SessionStoreOptions = {}, logger?: Logger) {
    this.#sessions = sessions;
    this.#logger = logger;
    this.#ttlMs = options.defaultTtlMs ?? DEFAULT_TTL_MS;
    const interval = options.pruneIntervalMs ?? DEFAULT_PRUNE_INTERVAL_MS;
    if (interval > 0) {
      this.#timer = setInterval(() => {
        // Housekeeping only: a failed prune is retried next tick.
        this.prune().catch((err: unknown) => {
          this.#logger?.warn({ err: (err as Error).message }, 'session prune failed');
        });
      }, interval);
      // The prune timer alone must not keep the process alive.
      unref(this.#timer);
    }
  }

  #record(data: StoredSession, ttlMs: number | undefined): SessionRecord {
    const storeId = data['storeId'];
    return {
      storeId: typeof storeId === 'string' ? storeId : null,
      // JSON-safe (cookie Dates become strings), as any database would keep it.
      data: JSON.parse(JSON.stringify(data)) as Record<string, unknown>,
      expiresAt: new Date(Date.now() + (ttlMs ?? this.#ttlMs)),
    };
  }

  async get(sid: string): Promise<StoredSession | null> {
    const record = await this.#sessions.get(sid, new Date());
    return record ? record.data : null;
  }

  set(sid: string, data: StoredSession, ttlMs?: number): Promise<void> {
    return this.#sessions.set(sid, this.#record(data, ttlMs));
  }

  touch(sid: string, data: StoredSession, ttlMs?: number): Promise<void> {
    return this.#sessions.touch(sid, this.#record(data, ttlMs));
  }

  destroy(sid: string): Promise<void> {
    return this.#sessions.destroy(sid);
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
