// One app process of the pacing bench's multi-process scenario: real storage on
// the shared Postgres database, the built token manager and client, `callers`
// closed-loop callers on one store from `startAt` to `endAt` (epoch ms). Sends
// its figures to the parent over IPC. Plain ESM against dist/.

import { createClientFactory } from '../../dist/client/factory.js';
import { resolveClientOptions } from '../../dist/client/options.js';
import { requestToken } from '../../dist/oauth/token-endpoint.js';
import { createTokenManager } from '../../dist/refresh/manager.js';
import { resolveRefreshOptions } from '../../dist/refresh/options.js';
import { createStorage } from '../../dist/storage/index.js';
import { runCallers } from '../pacing-lib.js';

const config = JSON.parse(process.env.SAK_PACING_WORKER ?? '{}');
const storage = await createStorage({
  databaseUrl: config.databaseUrl,
  encryptionKeys: [config.encryptionKey],
  migrate: false,
  pool: { max: 4 },
});
const endpoint = {
  url: config.tokenUrl,
  clientId: config.clientId,
  clientSecret: config.clientSecret,
  encoding: 'json',
};
const tokens = createTokenManager({
  installations: storage.installations,
  options: resolveRefreshOptions({ sweepIntervalMs: 0, pollIntervalMs: 20 }),
  refresh: (rt, signal) =>
    requestToken(endpoint, { grant_type: 'refresh_token', refresh_token: rt }, { signal }),
});
const stats = { responses: 0, tooMany: 0 };
const counting = async (url, init) => {
  const res = await fetch(url, init);
  stats.responses++;
  if (res.status === 429) stats.tooMany++;
  return res;
};
const clients = createClientFactory({
  options: resolveClientOptions({ baseUrl: config.apiUrl, fetch: counting }),
  tokens,
});
const client = clients.forStore(config.storeId);
const go = new Promise((resolve) => process.once('message', resolve));
process.send({ ready: true });
const { startAt, endAt } = await go;
const result = await runCallers(client, { callers: config.callers, startAt, endAt });
process.send({ result: { ...result, ...stats } });
await storage.close();
process.exit(0);
