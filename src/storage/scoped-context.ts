/**
 * An `AsyncLocalStorage` that is switched off while none of its runs is in flight.
 *
 * Why: on Node 20 an enabled `AsyncLocalStorage` turns on async hooks for every promise
 * and async resource the process makes, for the rest of its life: measured on the peer
 * bench's route, ~1.4 µs of CPU per request on bare Hono (8 %) and ~5 % on bare Express,
 * paid by every request of the app, though the kit's storage needs its contexts only
 * inside a transaction, a watched transaction or a guarded checkout, which are rare next
 * to requests served from memory. Once the last run settles, `disable()` takes this
 * instance off Node's list (Node turns the hooks off when no instance is left on it, so
 * an app's own `AsyncLocalStorage` keeps them on, as before); the next `run()` turns it on.
 *
 * What a caller sees is unchanged for work inside a run. Work a run started and left
 * running (a callback not awaited) reads no store once no run is in flight, where it
 * read the run's (closed) context before: both mean "no transaction".
 */
import { AsyncLocalStorage } from 'node:async_hooks';

export interface ScopedContext<T> {
  /** `fn` with `store` as the context of its async call chain (see `AsyncLocalStorage.run`). */
  run<R>(store: T, fn: () => Promise<R>): Promise<R>;
  /** The context of the current async call chain, if a run of it is in flight. */
  getStore(): T | undefined;
}

/** A context that keeps Node's async hooks off while it is idle. */
export function createScopedContext<T>(): ScopedContext<T> {
  const storage = new AsyncLocalStorage<T>();
  let inFlight = 0;
  const settled = () => {
    inFlight--;
    // Optional call: a runtime whose AsyncLocalStorage cannot be disabled keeps it on, as before.
    if (inFlight === 0) storage.disable?.();
  };
  return {
    async run<R>(store: T, fn: () => Promise<R>): Promise<R> {
      inFlight++;
      try {
        return await storage.run(store, fn);
      } finally {
        settled();
      }
    },
    getStore: () => (inFlight === 0 ? undefined : storage.getStore()),
  };
}
