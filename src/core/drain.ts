/**
 * The drain state of one kit (DECISIONS.md: it lives in the composition): whether
 * the instance is shutting down, and the work it must finish first: requests
 * accepted (counted by both shells, and by the Node server when the kit watches
 * it) and work already acknowledged (webhook handlers answered 202 and still
 * running). While draining, health answers 503 "draining" and every answer
 * carries `Connection: close`, so keep-alive clients open their next connection
 * elsewhere. No timer, no framework: the shutdown sequence (src/shutdown/) and
 * the shells read and feed it.
 */

export interface Drain {
  /** True from the start of a shutdown (or `kit.close()`) on. */
  draining(): boolean;
  /** Starts draining (idempotent); readiness fails from now on. */
  begin(): void;
  /** Calls `listener` once when draining begins (at once when it has). */
  onBegin(listener: () => void): void;
  /**
   * Something accepted: it counts as in flight until the returned function is
   * called (idempotent, so a response's `finish` and `close` may both call it).
   */
  enter(): () => void;
  /**
   * A request seen by a shell: `enter()`, unless the server itself counts every
   * request (`serverCounts()`), so that none counts twice.
   */
  enterRequest(): () => void;
  /**
   * `enterRequest()` without a function to call back (a shell on a hot path keeps one
   * shared listener): true when the request was counted, and then `leaveRequest()` must
   * be called exactly once.
   */
  countRequest(): boolean;
  /** A request `countRequest()` counted is done. */
  leaveRequest(): void;
  /** From now on the server counts every request (src/shutdown watches it). */
  serverCounts(): void;
  /**
   * Whether the server counts every request: it then also marks each connection's
   * newest answer `Connection: close` while draining (src/shutdown/closing-connection.ts).
   */
  countedByServer(): boolean;
  /** Work acknowledged to someone (a 202): the shutdown waits for it like a request. */
  track<T>(work: Promise<T>): Promise<T>;
  /** Requests and acknowledged work under way. */
  inFlight(): number;
  /** Resolves true once nothing is in flight, or false when `signal` aborts first. */
  idle(signal?: AbortSignal): Promise<boolean>;
}

/** A new drain state: not draining, nothing in flight. */
export function createDrain(): Drain {
  let draining = false;
  let count = 0;
  const waiters = new Set<() => void>();
  const onBegin: Array<() => void> = [];
  let counted = false;
  const noop = () => undefined;

  function leave(): void {
    count--;
    if (count > 0) return;
    for (const w of waiters) w();
    waiters.clear();
  }

  function enter(): () => void {
    count++;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      leave();
    };
  }

  return {
    draining: () => draining,
    begin() {
      if (draining) return;
      draining = true;
      for (const listener of onBegin.splice(0)) listener();
    },
    onBegin(listener) {
      if (draining) listener();
      else onBegin.push(listener);
    },
    enter,
    enterRequest: () => (counted ? noop : enter()),
    countRequest() {
      if (counted) return false;
      count++;
      return true;
    },
    leaveRequest: leave,
    serverCounts() {
      counted = true;
    },
    countedByServer: () => counted,
    track(work) {
      const done = enter();
      work.then(done, done);
      return work;
    },
    inFlight: () => count,
    idle(signal) {
      if (count === 0) return Promise.resolve(true);
      if (signal?.aborted) return Promise.resolve(false);
      return new Promise<boolean>((resolve) => {
        const onIdle = () => {
          signal?.removeEventListener('abort', onAbort);
          resolve(true);
        };
        const onAbort = () => {
          waiters.delete(onIdle);
          resolve(false);
        };
        waiters.add(onIdle);
        signal?.addEventListener('abort', onAbort, { once: true });
      });
    },
  };
}
