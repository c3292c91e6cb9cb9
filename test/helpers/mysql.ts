/**
 * A throwaway MariaDB/MySQL database per test file, so test files can run in
 * parallel on one server. The server is required: when it is unreachable the
 * test fails with the fix, it never skips (CI=true or not).
 */
import { randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';
import type { TempDatabase } from './postgres.js';

export const MYSQL_ADMIN_URL = process.env.TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test';

/** A connection as the admin user, failing with the fix when the server is down. */
export async function mysqlAdmin(): Promise<mysql.Connection> {
  try {
    return await mysql.createConnection({ uri: MYSQL_ADMIN_URL, connectTimeout: 5000 });
  } catch (cause) {
    throw new Error(
      `MariaDB is required for this test but ${MYSQL_ADMIN_URL} is unreachable. ` +
        'Start it with: start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd ' +
        '(then wait for `mariadb-admin ping`), or set TEST_MYSQL_URL.',
      { cause },
    );
  }
}

export async function createTempMysqlDatabase(prefix = 'sak'): Promise<TempDatabase> {
  const name = `${prefix}_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  const admin = await mysqlAdmin();
  try {
    await admin.query(
      `CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci`,
    );
  } finally {
    await admin.end();
  }
  const url = new URL(MYSQL_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    async drop() {
      const c = await mysqlAdmin();
      try {
        await c.query(`DROP DATABASE IF EXISTS \`${name}\``);
      } finally {
        await c.end();
      }
    },
  };
}
