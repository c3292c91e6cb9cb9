/**
 * The database servers the journeys run on (Postgres and MariaDB), behind one
 * shape: a throwaway database plus a plain client to read it from the test
 * process. Queries use `?` placeholders on both.
 */
import mysql from 'mysql2/promise';
import pg from 'pg';
import { createTempMysqlDatabase } from './mysql.js';
import { createTempDatabase, type TempDatabase } from './postgres.js';

export interface ServerDatabase extends TempDatabase {
  /** The first column of the first row, as a number. */
  one(query: string, params?: unknown[]): Promise<number>;
  rows<T>(query: string, params?: unknown[]): Promise<T[]>;
  /** Connections other clients hold open on this database. */
  connections(): Promise<number>;
}

export interface ServerKind {
  dialect: 'postgres' | 'mysql';
  /** For test names. */
  label: string;
  create(prefix: string): Promise<ServerDatabase>;
}

const toPg = (query: string) => {
  let n = 0;
  return query.replace(/\?/g, () => `$${++n}`);
};

export const POSTGRES: ServerKind = {
  dialect: 'postgres',
  label: 'Postgres',
  async create(prefix) {
    const db = await createTempDatabase(prefix);
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    // One query at a time on the one client: tests ask in parallel (Promise.all), and pg
    // deprecates queueing a query behind another (pg@9 removes it).
    let last: Promise<unknown> = Promise.resolve();
    const query = (text: string, params: unknown[]) => {
      const run = last.then(() => client.query(text, params));
      last = run.catch(() => undefined);
      return run;
    };
    const rows = async <T>(text: string, params: unknown[] = []) =>
      (await query(toPg(text), params)).rows as T[];
    return {
      ...db,
      rows,
      one: async (query, params) => Number(Object.values((await rows(query, params))[0] ?? {})[0]),
      connections: async () =>
        Number(
          (
            await query(
              'SELECT count(*) AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
              [db.name],
            )
          ).rows[0].n,
        ),
      async drop() {
        await client.end().catch(() => undefined);
        await db.drop();
      },
    };
  },
};

export const MARIADB: ServerKind = {
  dialect: 'mysql',
  label: 'MariaDB',
  async create(prefix) {
    const db = await createTempMysqlDatabase(prefix);
    const client = await mysql.createConnection({ uri: db.url });
    const rows = async <T>(query: string, params: unknown[] = []) =>
      (await client.query(query, params))[0] as T[];
    return {
      ...db,
      rows,
      one: async (query, params) => Number(Object.values((await rows(query, params))[0] ?? {})[0]),
      connections: async () =>
        Number(
          (
            await rows<{ n: number }>(
              'SELECT count(*) AS n FROM information_schema.processlist WHERE db = ? AND id <> CONNECTION_ID()',
              [db.name],
            )
          )[0]?.n,
        ),
      async drop() {
        await client.end().catch(() => undefined);
        await db.drop();
      },
    };
  },
};

export const SERVERS: readonly ServerKind[] = [POSTGRES, MARIADB];
