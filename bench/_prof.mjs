import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createStorage } from '../dist/storage/index.js';

const dir = mkdtempSync(join(tmpdir(), 'p-'));
const s = await createStorage({
  databaseUrl: `file:${join(dir, 'a.db')}`,
  encryptionKeys: [randomBytes(32).toString('base64url')],
});
await s.installations.upsert('st', {
  scopes: ['a'],
  accessToken: 'at_' + randomBytes(32).toString('base64url'),
  refreshToken: 'rt_' + randomBytes(32).toString('base64url'),
  accessTokenExpiresAt: new Date(Date.now() + 3600000),
});
const c = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
for (let k = 0; k < 3; k++) {
  const c0 = c();
  for (let i = 0; i < 5000; i++) await s.installations.get('st');
  console.log('cpu us/op', (c() - c0) / 5000);
}
await s.close();
