/**
 * Group commit for a connection that runs one transaction at a time (SQLite).
 *
 * With `synchronous = FULL` every COMMIT is an fsync, and the fsync, not the
 * SQL, is most of what a webhook delivery costs. Transactions asked for in the
 * same turn of the event loop (deliveries that arrived together) therefore
 * share one BEGIN … COMMIT: each runs inside its own savepoint, so a failure
 * undoes only its own writes, and none of them resolves before the COMMIT that
 * makes it durable. When the COMMIT fails because the database failed (disk
 * full, I/O), every member rejects: nothing of theirs was written, so the
 * platform's retry finds them new. When it fails on a constraint checked only
 * at COMMIT, the members run again one transaction each, so only the culprit
 * fails.
 */
import { setImmediate as nextTurn } from 'node:timers';

/** What the group commit needs from the connection. Every hook but `run` is synchronous. */
export interface GroupCommitConnection {
  /** Runs `fn` holding the connection's lock (no other transaction interleaves). */
  withLock<T>(fn: () => Promise<T>): Promise<T>;
  begin(): void;
  commit(): void;
  /** Abandons the open transaction; never throws (the caller is already failing). */
  rollback(): void;
  savepoint(name: string): void;
  release(name: string): void;
  /** Undoes and releases savepoint `name`; false when that could not be done. */
  rollbackTo(name: string): boolean;
  /** False once the database abandoned the transaction itself (SQLite does on IOERR, FULL, …). */
  inTransaction(): boolean;
  /** Runs `fn` as a transaction body: the context that makes storage calls join the transaction. */
  run<T>(fn: () => Promise<T>): Promise<T>;
  /** The error a member's caller sees when its own body failed with `err`. */
  memberError(err: unknown): unknown;
  /** The error every member sees when BEGIN or COMMIT failed with `err`. */
  groupError(err: unknown): unknown;
  /**
   * True when a failed COMMIT may be one member's fault rather than the
   * database's (a deferred constraint is checked only at COMMIT).
   */
  memberMayHaveFailedCommit(err: unknown): boolean;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

interface Member {
  /** Runs the body once, inside the transaction context and its caller's async context. */
  task: () => Promise<unknown>;
  resolve(value: unknown): void;
  reject(reason: unknown): void;
}

/** Most members per group: bounds how long the first one waits for its COMMIT. */
export const MAX_GROUP_SIZE = 64;

export interface GroupCommit {
  /** Runs `body` in the next group's transaction; settles after that COMMIT. */
  run<T>(body: () => Promise<T>): Promise<T>;
  /** Commits a group that is waiting for its turn now (before closing the connection). */
  flush(): Promise<void>;
}

export function createGroupCommit(
  conn: GroupCommitConnection,
  maxGroupSize: number = MAX_GROUP_SIZE,
): GroupCommit {
  const queue: Member[] = [];
  let scheduled = false;
  let savepoints = 0;

  function schedule(): void {
    if (scheduled) return;
    scheduled = true;
    // The next turn, after the I/O callbacks of this one: every delivery read
    // in the same poll phase joins. An idle server waits one turn, not a timer.
    nextTurn(() => {
      void conn.withLock(commitGroup);
    });
  }

  async function commitGroup(): Promise<void> {
    scheduled = false;
    const group = queue.splice(0, maxGroupSize);
    if (queue.length > 0) schedule();
    if (group.length === 0) return;
    try {
      conn.begin();
    } catch (err) {
      const error = conn.groupError(err);
      for (const m of group) m.reject(error);
      return;
    }
    const done: Array<{ member: Member; value: unknown }> = [];
    for (let i = 0; i < group.length; i++) {
      const member = group[i] as Member;
      const name = `gc_${++savepoints}`;
      try {
        conn.savepoint(name);
      } catch (err) {
        return abandon(done, group.slice(i), err);
      }
      try {
        const value = await member.task();
        conn.release(name);
        done.push({ member, value });
      } catch (err) {
        if (!conn.inTransaction() || !conn.rollbackTo(name)) {
          // The database dropped the whole transaction (or the savepoint could
          // not be undone): the members before this one lost their writes too.
          member.reject(conn.memberError(err));
          return abandon(done, group.slice(i + 1), err);
        }
        member.reject(conn.memberError(err));
      }
    }
    try {
      conn.commit();
    } catch (err) {
      conn.rollback();
      if (!conn.memberMayHaveFailedCommit(err)) {
        const error = conn.groupError(err);
        for (const { member } of done) member.reject(error);
        return;
      }
      // Which member broke the COMMIT is unknown, and one delivery must not
      // take the others down with it (again at every retry). Nothing of theirs
      // was written and no caller was answered: each runs again in its own
      // transaction, as the platform's redelivery would have run it.
      for (const { member } of done) await runAlone(member);
      return;
    }
    for (const { member, value } of done) member.resolve(value);
  }

  async function runAlone(member: Member): Promise<void> {
    try {
      conn.begin();
    } catch (err) {
      member.reject(conn.groupError(err));
      return;
    }
    try {
      const value = await member.task();
      conn.commit();
      member.resolve(value);
    } catch (err) {
      conn.rollback();
      member.reject(conn.memberError(err));
    }
  }

  /** The transaction is lost: finished members fail, members not yet run go to the next group. */
  function abandon(done: Array<{ member: Member }>, notRun: Member[], err: unknown): void {
    conn.rollback();
    const error = conn.groupError(err);
    for (const { member } of done) member.reject(error);
    if (notRun.length > 0) {
      queue.unshift(...notRun);
      schedule();
    }
  }

  return {
    run<T>(body: () => Promise<T>): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        // The body must run in its caller's async context (the request's trace
        // span, the app's AsyncLocalStorage), not in that of whichever delivery
        // scheduled the group. So it runs from this async function, started
        // here by the caller, each time the group hands it a turn: cheaper than
        // AsyncResource.bind, which cost ~8 µs per delivery.
        let turn: ((go: boolean) => void) | undefined;
        let finished: ((outcome: Outcome) => void) | undefined;
        const waitForTurn = () =>
          new Promise<boolean>((r) => {
            turn = r;
          });
        void (async () => {
          while (await waitForTurn()) {
            let outcome: Outcome;
            try {
              outcome = { ok: true, value: await conn.run(body) };
            } catch (error) {
              outcome = { ok: false, error };
            }
            finished?.(outcome);
          }
        })();
        queue.push({
          task: () =>
            new Promise((done, fail) => {
              finished = (o) => (o.ok ? done(o.value) : fail(o.error));
              turn?.(true);
            }),
          resolve(value) {
            turn?.(false);
            resolve(value as T);
          },
          reject(reason) {
            turn?.(false);
            reject(reason);
          },
        });
        schedule();
      });
    },
    async flush() {
      while (queue.length > 0) await conn.withLock(commitGroup);
    },
  };
}
