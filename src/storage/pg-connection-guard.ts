/**
 * Gives back the pooled connection of a Postgres transaction whose BEGIN failed.
 *
 * Drizzle's node-postgres `transaction()` checks a client out of the pool and
 * sends BEGIN before entering the `try` whose `finally` releases it: when BEGIN
 * fails (the storage deadline, a stalled network: `query_timeout`), the client
 * is never released. Each such failure took one connection from the pool for
 * good, so a database that stalled a few times left the pool empty and every
 * later operation timed out until a restart; `kit.close()` then waited for the
 * lost connections forever (pg's `pool.end()` waits for every checked-out client).
 *
 * The guard notes the client a transaction checks out (the first thing Drizzle
 * does, synchronously inside `transaction()`) and, once the transaction has
 * settled either way, releases it if Drizzle did not, with an error so the pool
 * destroys it rather than hand out a connection whose last statement may still
 * be in flight.
 */
import type pg from 'pg';
import { createScopedContext } from './scoped-context.js';

interface Checkout {
  client: pg.PoolClient | undefined;
  released: boolean;
}

/** A transaction left its connection checked out: the pool destroys it. */
class AbandonedConnectionError extends Error {
  constructor() {
    super('The transaction ended without releasing its connection (BEGIN failed).');
    this.name = 'AbandonedConnectionError';
  }
}

/** Wraps `pool.connect` once; `guarded(work)` releases what `work`'s transaction left checked out. */
export function guardTransactionConnections(pool: pg.Pool) {
  const current = createScopedContext<Checkout>();
  const original = pool.connect.bind(pool) as (callback?: unknown) => Promise<pg.PoolClient>;
  pool.connect = ((callback?: unknown) => {
    const checkout = current.getStore();
    // pool.query's callback form, and checkouts outside a guarded transaction, pass through.
    if (callback !== undefined || checkout === undefined || checkout.client !== undefined) {
      return original(callback);
    }
    return original().then((client) => {
      checkout.client = client;
      const release = client.release;
      client.release = (err?: Error | boolean) => {
        checkout.released = true;
        client.release = release;
        return release.call(client, err);
      };
      return client;
    });
  }) as typeof pool.connect;

  return async function guarded<T>(work: () => Promise<T>): Promise<T> {
    const checkout: Checkout = { client: undefined, released: false };
    try {
      return await current.run(checkout, work);
    } finally {
      if (checkout.client !== undefined && !checkout.released) {
        checkout.released = true;
        checkout.client.release(new AbandonedConnectionError());
      }
    }
  };
}
