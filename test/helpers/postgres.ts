/**
 * A throwaway Postgres database per test file, so test files can run in
 * parallel on one server. Postgres is required: when it is unreachable the
 * test fails with the fix, it never skips (CI=true or not).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const POSTGRES_ADMIN_URL =
  process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface TempDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

export async function createTempDatabase(prefix = 'sak'): Promise<TempDatabase> {
  const name = `${prefix}_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
  try {
    await admin.connect();
  } catch (cause) {
    throw new Error(
      `Postgres is required for this test but ${POSTGRES_ADMIN_URL} is unreachable. ` +
        'Start it with: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start ' +
        '(or set TEST_POSTGRES_URL).',
      { cause },
    );
  }
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(POSTGRES_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    async drop() {
      const c = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}
