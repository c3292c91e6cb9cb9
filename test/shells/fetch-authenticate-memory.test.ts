/**
 * kit.authenticate answers a bearer token it verified before from memory (as
 * kit.authenticated() does on Express), by the full path's rules: the same store
 * context, and nothing remembered survives a purge, a scope the grant lacks or an
 * expired token. Real kit on a SQLite file; no HTTP server needed (a `Request`).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { internalsOf } from '../../src/compose/internals.js';
import { type StoreAppKit, storeApp } from '../../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'sak-fetch-memory-'));
const APP = 'http://127.0.0.1:3999';

describe('kit.authenticate from memory', () => {
  let kit: StoreAppKit;
  beforeAll(async () => {
    kit = (await storeApp({
      appUrl: APP,
      oauth: {
        clientId: 'fetch-memory',
        clientSecret: randomBytes(24).toString('base64url'),
        scopes: ['read_products'],
        authUrl: 'http://127.0.0.1:9',
      },
      storage: {
        databaseUrl: `file:${join(dir, 'kit.db')}`,
        encryptionKeys: [randomBytes(32).toString('base64url')],
      },
      session: { secret: randomBytes(32).toString('base64url') },
      webhooks: { secrets: [`whsec_${randomBytes(32).toString('base64')}`] },
      refresh: { sweepIntervalMs: 0 },
      logger: { level: 'silent' },
    })) as StoreAppKit;
  });
  afterAll(async () => {
    await kit?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function install(storeId: string, scopes = ['read_products']): Promise<string> {
    await internalsOf(kit).storage.installations.upsert(storeId, {
      scopes,
      accessToken: `at_${randomBytes(16).toString('hex')}`,
      refreshToken: `rt_${randomBytes(16).toString('hex')}`,
      accessTokenExpiresAt: new Date(Date.now() + 3_600_000),
    });
    return (await kit.sessionToken(storeId)).token;
  }
  const call = (token: string) =>
    kit.authenticate(
      new Request(`${APP}/api/data`, {
        headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
      }),
    );

  it('a token seen before is answered with the same store context as the first time', async () => {
    const token = await install('st_memory_same');
    const first = await call(token);
    const again = await call(token);
    expect(first).not.toBeInstanceOf(Response);
    expect(again).not.toBeInstanceOf(Response);
    if (first instanceof Response || again instanceof Response) return;
    expect({ ...again, client: undefined, sessionToken: undefined }).toEqual({
      ...first,
      client: undefined,
      sessionToken: undefined,
    });
    expect(again.client).toBe(first.client);
    expect(again.missingScopes).toEqual([]);
    expect((await again.sessionToken()).token).toEqual(expect.any(String));
  });

  it('attack: a remembered token of a purged store is refused at once (401, challenge)', async () => {
    const token = await install('st_memory_purged');
    expect(await call(token)).not.toBeInstanceOf(Response);
    expect(await call(token)).not.toBeInstanceOf(Response);
    await kit.purge('st_memory_purged');
    const refused = await call(token);
    expect(refused).toBeInstanceOf(Response);
    expect((refused as Response).status).toBe(401);
    expect((refused as Response).headers.get('www-authenticate')).toMatch(/^Bearer/);
  });

  it('a remembered token of a grant that lacks a configured scope takes the full path and is refused', async () => {
    const token = await install('st_memory_scopes', ['read_orders']);
    const refused = await call(token);
    expect(refused).toBeInstanceOf(Response);
    expect(await call(token)).toBeInstanceOf(Response);
  });

  it('a malformed bearer header is never answered from memory', async () => {
    const token = await install('st_memory_malformed');
    expect(await call(token)).not.toBeInstanceOf(Response);
    const spaced = await kit.authenticate(
      new Request(`${APP}/api/data`, { headers: { authorization: `Bearer ${token} extra` } }),
    );
    expect(spaced).toBeInstanceOf(Response);
    expect((spaced as Response).status).toBe(401);
  });
});
