/**
 * A bounded map with least-recently-used eviction: the one shape every
 * per-store structure of the kit uses (installation cache, API clients,
 * rate-limit gates, remembered session tokens), so none of them grows with the
 * number of installed stores.
 *
 * A Map keeps insertion order, so "touch" is delete + set and the oldest key
 * is the first one: O(1) for every operation, no per-entry node object (the
 * cost of an entry is the Map's own, ~40 bytes on V8, plus the value).
 * `lru-cache` would do the same with more code and one thing we need missing:
 * `canEvict` (a rate-limit gate with requests in flight must never be dropped,
 * or two gates would pace one store).
 */
export interface Lru<K, V> {
  /** The value, marked as most recently used; undefined when absent. */
  get(key: K): V | undefined;
  /** The value without touching its recency. */
  peek(key: K): V | undefined;
  /** Inserts or replaces (most recently used), then evicts down to the bound. */
  set(key: K, value: V): void;
  delete(key: K): boolean;
  has(key: K): boolean;
  clear(): void;
  /** Drops every entry for which `stale` says true (e.g. expired ones). */
  prune(stale: (value: V, key: K) => boolean): number;
  readonly size: number;
  readonly max: number;
}

export interface LruOptions<K, V> {
  /** Entries kept at most (evictable ones; see `canEvict`). At least 1. */
  max: number;
  /**
   * False keeps an entry in memory even when it is the least recently used
   * (it is busy); the bound is then exceeded by the busy entries only.
   * @default () => true
   */
  canEvict?: (value: V, key: K) => boolean;
  /** Called for each entry evicted by the bound (not for delete, clear or prune). */
  onEvict?: (value: V, key: K) => void;
}

/** Busy entries looked past per eviction at most, so a set stays O(1) when many are busy. */
const MAX_SKIPPED_PER_EVICTION = 16;

export function createLru<K, V>(options: LruOptions<K, V>): Lru<K, V> {
  const { canEvict, onEvict } = options;
  const max = Math.max(1, Math.floor(options.max));
  const map = new Map<K, V>();

  /** Evicts down to the bound, never `newest` (the entry just set: it is in use). */
  function evict(newest: K): void {
    let skipped = 0;
    while (map.size > max && skipped < MAX_SKIPPED_PER_EVICTION) {
      const [key, value] = map.entries().next().value as [K, V];
      // Every other entry is busy: the bound is exceeded by busy entries only.
      if (key === newest) return;
      map.delete(key);
      if (!canEvict || canEvict(value, key)) {
        onEvict?.(value, key);
      } else {
        // A busy entry goes to the back: it is in use right now.
        map.set(key, value);
        skipped++;
      }
    }
  }

  return {
    get(key) {
      const value = map.get(key);
      if (value === undefined) return undefined;
      map.delete(key);
      map.set(key, value);
      return value;
    },
    peek: (key) => map.get(key),
    set(key, value) {
      map.delete(key);
      map.set(key, value);
      if (map.size > max) evict(key);
    },
    delete: (key) => map.delete(key),
    has: (key) => map.has(key),
    clear: () => map.clear(),
    prune(stale) {
      let dropped = 0;
      for (const [key, value] of map) {
        if (stale(value, key)) {
          map.delete(key);
          dropped++;
        }
      }
      return dropped;
    },
    get size() {
      return map.size;
    },
    max,
  };
}
