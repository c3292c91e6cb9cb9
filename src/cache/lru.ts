/**
 * A bounded map with least-recently-used eviction: the one shape every
 * per-store structure of the kit uses (installation cache, API clients,
 * rate-limit gates, remembered session tokens), so none of them grows with the
 * number of installed stores.
 *
 * A Map keeps insertion order, so "touch" is delete + set and the oldest key
 * is the first one: O(1) for every operation (the cost of an entry is the
 * Map's own, ~40 bytes on V8, a 24-byte slot, plus the value). Reads of
 * recently moved entries skip the touch (see `settled` below).
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
  /**
   * Called for each value that leaves the map, however it goes: evicted, deleted,
   * replaced by `set`, cleared or pruned (not when a read moves it to the back). For
   * what a holder of a value outside the map must learn (e.g. that it is no longer
   * the cache's).
   */
  onDrop?: (value: V, key: K) => void;
}

/** Busy entries looked past per eviction at most, so a set stays O(1) when many are busy. */
const MAX_SKIPPED_PER_EVICTION = 16;

/** An entry and when it last moved to the back (a count of moves, not a time). */
interface Slot<V> {
  value: V;
  stamp: number;
}

export function createLru<K, V>(options: LruOptions<K, V>): Lru<K, V> {
  const { canEvict, onEvict, onDrop } = options;
  const max = Math.max(1, Math.floor(options.max));
  // A read moves its entry to the back only when more than `settled` entries
  // have moved there since it last did. Moving is a Map delete + set (the
  // costliest part of a read, and a read is on every authenticated request);
  // an entry among the newest `settled` is far from eviction anyway. What
  // stays exact: after a read at most `settled` entries are behind it, and it
  // goes only once `max` are, so an entry read is never evicted by the next
  // max − settled (≥ max/2) moves; with a small bound (max ≤ 3) every read moves.
  const settled = max <= 3 ? 0 : Math.floor(max / 2);
  const map = new Map<K, Slot<V>>();
  let moves = 0;

  /** Evicts down to the bound, never `newest` (the entry just set: it is in use). */
  function evict(newest: K): void {
    let skipped = 0;
    while (map.size > max && skipped < MAX_SKIPPED_PER_EVICTION) {
      const [key, slot] = map.entries().next().value as [K, Slot<V>];
      // Every other entry is busy: the bound is exceeded by busy entries only.
      if (key === newest) return;
      map.delete(key);
      if (!canEvict || canEvict(slot.value, key)) {
        onEvict?.(slot.value, key);
        onDrop?.(slot.value, key);
      } else {
        // A busy entry goes to the back: it is in use right now.
        slot.stamp = ++moves;
        map.set(key, slot);
        skipped++;
      }
    }
  }

  return {
    get(key) {
      const slot = map.get(key);
      if (slot === undefined) return undefined;
      if (moves - slot.stamp > settled) {
        map.delete(key);
        slot.stamp = ++moves;
        map.set(key, slot);
      }
      return slot.value;
    },
    peek: (key) => map.get(key)?.value,
    set(key, value) {
      const replaced = onDrop === undefined ? undefined : map.get(key);
      map.delete(key);
      map.set(key, { value, stamp: ++moves });
      if (replaced !== undefined && replaced.value !== value) onDrop?.(replaced.value, key);
      if (map.size > max) evict(key);
    },
    delete(key) {
      const slot = onDrop === undefined ? undefined : map.get(key);
      const deleted = map.delete(key);
      if (slot !== undefined) onDrop?.(slot.value, key);
      return deleted;
    },
    has: (key) => map.has(key),
    clear() {
      const slots = onDrop === undefined ? [] : [...map];
      map.clear();
      for (const [key, slot] of slots) onDrop?.(slot.value, key);
    },
    prune(stale) {
      let dropped = 0;
      for (const [key, slot] of map) {
        if (stale(slot.value, key)) {
          map.delete(key);
          onDrop?.(slot.value, key);
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
