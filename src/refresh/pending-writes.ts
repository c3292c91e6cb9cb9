/**
 * Refreshed token pairs whose write failed (disk full, connection dropped):
 * the platform has already rotated the refresh token, so the pair in hand is
 * the grant. It is kept here, sealed, served to callers, and written again
 * with backoff until it lands or something newer supersedes it.
 *
 * - Sealed: AES-256-GCM under a key made for this process only and never
 *   stored, so the pair is not a plaintext string on the heap while it waits.
 *   Where the runtime has no `node:crypto` (Workers, whose Web Crypto is
 *   async only), the pair is held as the installation cache holds tokens.
 * - Written under the same compare-and-swap as a refresh: the lease we took
 *   (its owner id), at the version we refreshed from. A retry never
 *   overwrites tokens another process committed meanwhile (a refresh with the
 *   old refresh token inside the platform's grace period after our lease ran
 *   out, or a reinstall): the version moved, we drop ours and use theirs.
 * - If another process spent the old refresh token after the grace period and
 *   flagged the installation (`invalid_grant`), our pair is the only valid
 *   grant left: we take the lease at the version we refreshed from again and
 *   write it, which clears the flag.
 * - A purge (the row is gone) or a reinstall in this process drops the pair.
 *
 * A crash while a pair waits here loses it; another process then refreshes
 * with the old refresh token once the lease (`refresh.leaseMs`) expires,
 * inside the platform's grace period (60 s by default on the local platform).
 */

import { unref } from '../core/timers.js';
import { concat, fromUtf8, nodeCrypto, randomBytes, utf8 } from '../crypto/primitives.js';
import { StoreAppError } from '../errors/index.js';
import type { Installation, InstallationRepository, TokenSet } from '../storage/types.js';

/** What the manager needs from storage to land a pair. */
export type PendingWriteStore = Pick<
  InstallationRepository,
  'get' | 'completeRefresh' | 'acquireRefreshLease'
>;

export interface PendingWritesLogger {
  info(obj: Record<string, unknown>, msg: string): void;
  warn(obj: Record<string, unknown>, msg: string): void;
  error(obj: Record<string, unknown>, msg: string): void;
}

export interface PendingWritesDeps {
  installations: PendingWriteStore;
  /** Lease taken again when the pair must be written after another process flagged the row. */
  leaseMs: number;
  /** First retry delay in ms (doubles up to `maxDelayMs`, with jitter). */
  baseDelayMs: number;
  maxDelayMs: number;
  /** A pair landed: the committed installation (cache it). */
  onLanded(inst: Installation): void;
  /** A pair was superseded (newer tokens stored, or the store is gone): drop copies. */
  onDropped(storeId: string): void;
  logger?: PendingWritesLogger | undefined;
  /** @default Date.now */
  now?: () => number;
}

export interface PendingWrites {
  /**
   * Keep `tokens` (refreshed from `base` under the lease `owner`) after their
   * write failed with `cause`, and start retrying. Returns the installation
   * to serve meanwhile.
   */
  keep(base: Installation, owner: string, tokens: TokenSet, cause: unknown): Installation;
  /** The installation waiting to be written for this store (tokens unsealed), if any. */
  get(storeId: string): Installation | undefined;
  /** One write attempt now; the committed installation when it landed. */
  flush(storeId: string): Promise<Installation | undefined>;
  /** Forget the pair (the store was purged or installed again in this process). */
  drop(storeId: string): void;
  /** Pairs waiting to be written. */
  size(): number;
  /** One write attempt now for every pair (a shutdown, before storage closes); resolves with how many still wait. */
  flushAll(): Promise<number>;
}

interface Entry {
  base: Installation;
  owner: string;
  /** iv ‖ tag ‖ ciphertext of the JSON of the TokenSet (the JSON itself without `node:crypto`). */
  sealed: Uint8Array;
  attempts: number;
  timer: NodeJS.Timeout | undefined;
  running: Promise<Installation | undefined> | undefined;
}

export function createPendingWrites(deps: PendingWritesDeps): PendingWrites {
  const now = deps.now ?? Date.now;
  const key = randomBytes(32);
  const entries = new Map<string, Entry>();

  function seal(storeId: string, tokens: TokenSet): Uint8Array {
    const json = utf8(JSON.stringify(tokens));
    if (!nodeCrypto) return json;
    const iv = randomBytes(12);
    const cipher = nodeCrypto.createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(utf8(storeId));
    const body = concat(cipher.update(json), cipher.final());
    return concat(iv, cipher.getAuthTag(), body);
  }

  function unseal(storeId: string, sealed: Uint8Array): TokenSet {
    let json = sealed;
    if (nodeCrypto) {
      const decipher = nodeCrypto.createDecipheriv('aes-256-gcm', key, sealed.subarray(0, 12));
      decipher.setAAD(utf8(storeId));
      decipher.setAuthTag(sealed.subarray(12, 28));
      json = concat(decipher.update(sealed.subarray(28)), decipher.final());
    }
    const t = JSON.parse(fromUtf8(json)) as TokenSet & { accessTokenExpiresAt: string };
    return { ...t, accessTokenExpiresAt: new Date(t.accessTokenExpiresAt) };
  }

  function toInstallation(storeId: string, e: Entry): Installation {
    const t = unseal(storeId, e.sealed);
    return {
      ...e.base,
      ...t,
      version: e.base.version + 1,
      needsReauth: false,
      updatedAt: new Date(now()),
    };
  }

  function schedule(storeId: string, e: Entry): void {
    if (e.timer || entries.get(storeId) !== e) return;
    const cap = Math.min(deps.maxDelayMs, deps.baseDelayMs * 2 ** Math.min(e.attempts, 20));
    e.timer = setTimeout(
      () => {
        e.timer = undefined;
        void attempt(storeId, e);
      },
      cap / 2 + Math.random() * (cap / 2),
    );
    // Waiting pairs never keep a process alive on their own (nor would they survive its exit).
    unref(e.timer);
  }

  function code(err: unknown): string | undefined {
    return err instanceof StoreAppError ? err.code : undefined;
  }

  /** Writes the pair once; undefined when it is still waiting or was dropped. */
  async function writeOnce(storeId: string, e: Entry): Promise<Installation | undefined> {
    const tokens = unseal(storeId, e.sealed);
    const committed = await deps.installations.completeRefresh(storeId, e.owner, tokens);
    if (committed) return committed;
    // The lease is no longer ours: see who has the row now.
    const current = await deps.installations.get(storeId);
    if (!current) {
      finish(storeId, e);
      deps.logger?.info(
        { event: 'refresh.pending_dropped', storeId, reason: 'not_installed' },
        'Refreshed tokens waiting to be stored were dropped: the store is no longer installed.',
      );
      return undefined;
    }
    if (current.version !== e.base.version) {
      finish(storeId, e);
      deps.logger?.info(
        { event: 'refresh.pending_dropped', storeId, reason: 'superseded' },
        'Refreshed tokens waiting to be stored were superseded by tokens stored meanwhile.',
      );
      return undefined;
    }
    // Same version: another process holds the lease (then wait: it commits or
    // flags), or flagged the row after the old refresh token stopped working
    // (then ours is the only valid grant: write it under a lease of our own).
    if (
      await deps.installations.acquireRefreshLease(storeId, e.base.version, e.owner, deps.leaseMs)
    ) {
      return (await deps.installations.completeRefresh(storeId, e.owner, tokens)) ?? undefined;
    }
    return undefined;
  }

  function finish(storeId: string, e: Entry): void {
    if (e.timer) clearTimeout(e.timer);
    e.timer = undefined;
    if (entries.get(storeId) === e) entries.delete(storeId);
    deps.onDropped(storeId);
  }

  function attempt(storeId: string, e: Entry): Promise<Installation | undefined> {
    if (entries.get(storeId) !== e) return Promise.resolve(undefined);
    e.running ??= (async () => {
      e.attempts++;
      try {
        const landed = await writeOnce(storeId, e);
        if (landed) {
          if (e.timer) clearTimeout(e.timer);
          e.timer = undefined;
          if (entries.get(storeId) === e) entries.delete(storeId);
          deps.logger?.info(
            { event: 'refresh.pending_stored', storeId, attempts: e.attempts },
            'Refreshed tokens that could not be stored earlier are stored now.',
          );
          deps.onLanded(landed);
          return landed;
        }
      } catch (err) {
        // Once at warn, then every 10th attempt: an outage must not flood the log.
        if (e.attempts === 1 || e.attempts % 10 === 0) {
          deps.logger?.warn(
            { event: 'refresh.pending_retry', storeId, code: code(err), attempts: e.attempts },
            'Storing refreshed tokens failed again; they are kept in memory and retried.',
          );
        }
      } finally {
        e.running = undefined;
      }
      schedule(storeId, e);
      return undefined;
    })();
    return e.running;
  }

  return {
    keep(base, owner, tokens, cause) {
      const old = entries.get(base.storeId);
      if (old?.timer) clearTimeout(old.timer);
      const e: Entry = {
        base,
        owner,
        sealed: seal(base.storeId, tokens),
        attempts: 0,
        timer: undefined,
        running: undefined,
      };
      entries.set(base.storeId, e);
      deps.logger?.error(
        { event: 'refresh.store_failed', storeId: base.storeId, code: code(cause) },
        'Storing refreshed tokens failed after the platform rotated them; they are kept in memory (encrypted) and written again until the database accepts them. Fix the database (see the error code); a restart before then relies on the platform grace period.',
      );
      schedule(base.storeId, e);
      return toInstallation(base.storeId, e);
    },
    get(storeId) {
      const e = entries.get(storeId);
      return e ? toInstallation(storeId, e) : undefined;
    },
    async flush(storeId) {
      const e = entries.get(storeId);
      if (!e) return undefined;
      if (e.timer) clearTimeout(e.timer);
      e.timer = undefined;
      return attempt(storeId, e);
    },
    drop(storeId) {
      const e = entries.get(storeId);
      if (!e) return;
      if (e.timer) clearTimeout(e.timer);
      e.timer = undefined;
      entries.delete(storeId);
    },
    size: () => entries.size,
    async flushAll() {
      await Promise.allSettled(
        [...entries].map(([storeId, e]) => {
          if (e.timer) clearTimeout(e.timer);
          e.timer = undefined;
          return attempt(storeId, e);
        }),
      );
      // A retry scheduled by a failed attempt must not outlive the kit.
      for (const e of entries.values()) {
        if (e.timer) clearTimeout(e.timer);
        e.timer = undefined;
      }
      return entries.size;
    },
  };
}
