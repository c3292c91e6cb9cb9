/**
 * The request path's installation cache: an LRU of installations (bounded by
 * `refresh.cacheMaxStores`), each entry with the ticket a reader may keep instead of
 * looking the store up again (`CacheTicket`). The token manager (./manager.ts) decides
 * what goes in and when an entry is usable; this module keeps the tickets honest: any
 * entry that leaves the cache, however it goes, ends its ticket.
 */
import { createLru, type Lru } from '../cache/lru.js';
import type { Installation } from '../storage/types.js';
import type { CacheEntry, CacheTicket } from './refresh-types.js';

/** The LRU, ending each entry's ticket as the entry leaves (deleted, replaced, evicted, pruned). */
export function createInstallationCache(max: number): Lru<string, CacheEntry> {
  return createLru<string, CacheEntry>({
    max,
    onDrop: (entry) => {
      entry.ticket.live = false;
    },
  });
}

/** A cache entry for `inst`, read at `loadedAt` (local ms), with a ticket of its own. */
export function cacheEntry(inst: Installation, loadedAt: number): CacheEntry {
  const expiresAtMs = inst.accessTokenExpiresAt.getTime();
  return { installation: inst, ticket: { live: true, loadedAt, expiresAtMs } };
}

/**
 * Whether a ticket's entry is still the cache's and usable: younger than `ttlMs` by the
 * local clock (`now`, the clock of `loadedAt`), its access token outside the refresh window
 * by the platform's (`platformNow`).
 */
export function ticketStands(
  ticket: CacheTicket,
  now: number,
  platformNow: number,
  ttlMs: number,
  windowMs: number,
): boolean {
  return (
    ticket.live && now - ticket.loadedAt < ttlMs && ticket.expiresAtMs - platformNow > windowMs
  );
}
