import { POSTGRES } from '../helpers/databases.js';
import { clockSkewSuite } from './clock-skew.js';

clockSkewSuite('Postgres', async () => {
  const db = await POSTGRES.create('sak_clock_skew');
  return {
    url: db.url,
    async expiry(storeId) {
      const [row] = await db.rows<{ at: Date }>(
        'SELECT access_expires_at AS at FROM store_app_installations WHERE store_id = ?',
        [storeId],
      );
      return row ? new Date(row.at).getTime() : undefined;
    },
    async outbox(storeId) {
      const rows = await db.rows<{ kind: string }>(
        'SELECT kind FROM store_app_pending_purges WHERE store_id = ?',
        [storeId],
      );
      return rows.map((r) => r.kind);
    },
    close: () => db.drop(),
  };
});
