/**
 * Deadlines on storage operations. A database that refuses connections fails
 * fast on its own; one that hangs (a network partition, a stalled server, a
 * proxy that stops forwarding) would hold every request for as long as TCP
 * keeps the socket open. Each statement (pool wait and connect included) and
 * each wait inside a transaction gets `storage.timeoutMs`, past which the
 * operation fails with a StorageError of reason `timeout` (503 with
 * Retry-After); the work it abandoned finishes or fails in the background.
 */
import { StorageError } from '../errors/index.js';
import { storageFailureMessage } from './error-causes.js';
import { createScopedContext } from './scoped-context.js';

/** Default of `storage.timeoutMs`. */
export const DEFAULT_STORAGE_TIMEOUT_MS = 2000;

/** The pseudo driver code of a passed deadline (the message names it). */
export const STORAGE_DEADLINE = 'STORAGE_DEADLINE';

export function deadlineError(what: string, ms: number): StorageError {
  return new StorageError(
    `${storageFailureMessage(what, 'timeout', STORAGE_DEADLINE)} (no answer within ${ms} ms)`,
    { reason: 'timeout' },
  );
}

/** The progress clock of the transaction an async call chain runs in. */
const progress = createScopedContext<{ last: number }>();

/** A statement inside a transaction completed: its inactivity deadline starts again. */
export function touch(): void {
  const p = progress.getStore();
  if (p) p.last = performance.now();
}

/** `work()`, or a `timeout` StorageError once `ms` have passed. */
export function withDeadline<T>(what: string, ms: number, work: () => Promise<T>): Promise<T> {
  if (ms <= 0) return work();
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(deadlineError(what, ms)), ms);
    work().then(
      (v) => {
        clearTimeout(timer);
        touch();
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(timer);
        reject(e);
      },
    );
  });
}

/**
 * A transaction whose every wait (connection, BEGIN, each statement, COMMIT,
 * ROLLBACK) is bounded: it fails once `ms` pass without a statement of it
 * completing. Work between statements counts as a wait, so keep a
 * transaction's body to database work.
 */
export function watchedTransaction<T>(ms: number, work: () => Promise<T>): Promise<T> {
  if (ms <= 0) return work();
  const clock = { last: performance.now() };
  return new Promise<T>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const check = () => {
      const idle = performance.now() - clock.last;
      if (idle >= ms) {
        reject(deadlineError('transaction', ms));
        return;
      }
      timer = setTimeout(check, ms - idle);
    };
    timer = setTimeout(check, ms);
    progress.run(clock, work).then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(timer);
        reject(e);
      },
    );
  });
}
