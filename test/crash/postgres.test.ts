import pg from 'pg';
import { createTempDatabase } from '../helpers/postgres.js';
import { crashSuite } from './suite.js';

crashSuite('Postgres', async () => {
  const db = await createTempDatabase('sak_crash');
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  const one = async (query: string, params: unknown[]) =>
    Number((await client.query<{ n: string }>(query, params)).rows[0]!.n);
  return {
    url: db.url,
    reader: {
      count: (table, storeId) =>
        one(`SELECT count(*) AS n FROM ${table} WHERE store_id = $1`, [storeId]),
      effects: (webhookId) =>
        one('SELECT count(*) AS n FROM webhook_effects WHERE webhook_id = $1', [webhookId]),
      async version(storeId) {
        const { rows } = await client.query<{ version: number }>(
          'SELECT version FROM store_app_installations WHERE store_id = $1',
          [storeId],
        );
        return rows[0]?.version ?? 0;
      },
      async close() {
        await client.end();
      },
    },
    drop: () => db.drop(),
  };
});
