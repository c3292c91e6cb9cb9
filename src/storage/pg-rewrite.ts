/**
 * Postgres: the purged rows' bytes out of the table and index files. VACUUM
 * (run after every purge) marks a deleted row's space free but leaves its
 * bytes in the page until a later row reuses it: measured, 39–41 of 50 purged
 * store ids were still in the heap files after VACUUM and a CHECKPOINT (issue
 * 33 §4). `VACUUM FULL` writes each table and its indexes anew without them;
 * the old files are emptied at its commit. It holds the table's ACCESS
 * EXCLUSIVE lock (readers wait) while it copies, so:
 * - the rewrites of a burst of purges are batched: the first purge after a
 *   quiet `minIntervalMs` rewrites at once (its `scrubbed` is true), later
 *   ones are owed and rewritten together when the interval has passed;
 * - the lock is waited for at most `LOCK_WAIT_MS`: a rewrite queued behind a
 *   long transaction would make every reader queue behind it. A table it could
 *   not lock is owed again for the next turn;
 * - rows a transaction older than the purge may still see are copied by
 *   `VACUUM FULL` (RECENTLY_DEAD): while one is open (in any database of the
 *   server: the rewrite's own snapshot counts its id) the turn is put off.
 * What stays (WAL, freed file blocks, backups) is in docs/security.md.
 */
import type pg from 'pg';
import type { Logger } from 'pino';

/** How long a rewrite waits for its table's lock before it gives the turn up. */
const LOCK_WAIT_MS = 200;
/** The statement's own bound: copying a large table takes long. */
const REWRITE_TIMEOUT_MS = 10 * 60_000;

export interface PgRewriteOptions {
  /** The least time between two rewrites, in ms; 0 rewrites after every purge. */
  minIntervalMs: number;
}

export interface PgRewriter {
  /**
   * After a purge committed: rewrites `tables` now when the last rewrite is
   * `minIntervalMs` old (true when all were rewritten); else runs `vacuum`
   * (the rows freed at once, their bytes not yet gone) and owes them to the
   * next turn (false).
   */
  afterPurge(tables: readonly string[], vacuum: () => Promise<boolean>): Promise<boolean>;
  /** Stops the timer; tables still owed are logged with the command that rewrites them. */
  close(): void;
}

/** At most one rewrite of the purged tables every 30 s: a burst's rewrites batched. */
export const DEFAULT_PURGE_REWRITE: PgRewriteOptions = { minIntervalMs: 30_000 };

const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;

export function createPgRewriter(
  pool: pg.Pool,
  options: PgRewriteOptions,
  logger: Logger | undefined,
): PgRewriter {
  const owed = new Set<string>();
  // The transaction-id horizon after the newest owed purge committed.
  let owedHorizon: string | undefined;
  let lastRun = Number.NEGATIVE_INFINITY;
  let running: Promise<boolean> | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let closed = false;

  /**
   * The next transaction id now, after the purges owed committed: a snapshot
   * whose horizon is older than it may still see their rows.
   */
  async function horizon(): Promise<string | undefined> {
    const { rows } = await pool.query(
      'SELECT (pg_snapshot_xmax(pg_current_snapshot())::text::bigint % 4294967296)::text AS x',
    );
    return rows[0]?.x as string | undefined;
  }

  /**
   * Whether a transaction older than `x` may still be seen as running by the
   * rewrite: VACUUM FULL copies the rows such a snapshot may see
   * (RECENTLY_DEAD) into the new file, so it would take the lock and leave
   * them. The horizon Postgres computes: snapshots held in this database
   * (autovacuum's ANALYZE too; a plain autovacuum VACUUM is left out, as
   * Postgres does), and transaction ids running in any database, prepared
   * ones and replication slots (the rewrite's own snapshot waits for those).
   */
  async function olderThan(x: string): Promise<boolean> {
    const { rows } = await pool.query(
      `SELECT 1 FROM pg_stat_activity
       WHERE pid <> pg_backend_pid()
         AND (age(backend_xid) > age($1::xid)
           OR (datname = current_database() AND age(backend_xmin) > age($1::xid)
               AND NOT (backend_type = 'autovacuum worker' AND query NOT LIKE '%ANALYZE%')))
       UNION ALL SELECT 1 FROM pg_prepared_xacts WHERE age(transaction) > age($1::xid)
       UNION ALL SELECT 1 FROM pg_replication_slots WHERE age(xmin) > age($1::xid)
       LIMIT 1`,
      [x],
    );
    return rows.length > 0;
  }

  async function rewrite(table: string): Promise<boolean> {
    const client = await pool.connect();
    try {
      await client.query(`SET lock_timeout = ${LOCK_WAIT_MS}`);
      await client.query({
        text: `VACUUM (FULL) ${quoteIdent(table)}`,
        query_timeout: REWRITE_TIMEOUT_MS,
      } as unknown as pg.QueryConfig);
      return true;
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      logger?.warn(
        {
          event: code === '55P03' ? 'purge.rewrite_deferred' : 'purge.rewrite_failed',
          table,
          errorCode: code,
        },
        code === '55P03'
          ? 'rewriting a table after purges waited too long for its lock; it is rewritten at the next turn'
          : 'rewriting a table after purges failed; it is tried again at the next turn',
      );
      return false;
    } finally {
      await client.query('RESET lock_timeout').catch(() => undefined);
      client.release();
    }
  }

  /** One turn: every owed table, one statement each (a busy table does not hold the others back). */
  async function turn(): Promise<boolean> {
    lastRun = performance.now();
    const older = owedHorizon !== undefined && (await olderThan(owedHorizon).catch(() => false));
    if (older) {
      logger?.warn(
        { event: 'purge.rewrite_deferred', tables: [...owed], reason: 'open_transaction' },
        'a transaction older than the purge is still open (the rewrite would keep the rows it may see); the rewrite waits for the next turn',
      );
      schedule();
      return false;
    }
    const tables = [...owed];
    owed.clear();
    let all = true;
    for (const table of tables) {
      if (closed || !(await rewrite(table).catch(() => false))) {
        owed.add(table);
        all = false;
      }
    }
    if (owed.size > 0) schedule();
    return all;
  }

  function schedule(): void {
    if (timer || closed) return;
    const wait = Math.max(0, lastRun + options.minIntervalMs - performance.now());
    timer = setTimeout(() => {
      timer = undefined;
      if (running) return void running.finally(schedule);
      running = turn().finally(() => {
        running = undefined;
      });
    }, wait);
    timer.unref?.();
  }

  return {
    async afterPurge(tables, vacuum) {
      if (tables.length === 0) return true;
      for (const table of tables) owed.add(table);
      owedHorizon = (await horizon().catch(() => undefined)) ?? owedHorizon;
      if (!closed && !running && performance.now() - lastRun >= options.minIntervalMs) {
        running = turn().finally(() => {
          running = undefined;
        });
        // Put off or failed: the rows are still freed at once.
        if (await running) return true;
      }
      await vacuum();
      schedule();
      return false;
    },
    close() {
      closed = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      if (owed.size > 0) {
        const list = [...owed].map(quoteIdent).join(', ');
        logger?.warn(
          { event: 'purge.rewrite_pending', tables: [...owed] },
          `purged rows may stay readable in these tables' files until the next purge's rewrite; to remove them now run: VACUUM (FULL) ${list}`,
        );
      }
    },
  };
}
