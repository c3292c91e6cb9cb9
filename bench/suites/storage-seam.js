// What the public storage seam costs: the kit's storage (token sealing and
// opening, input checks) over the built-in StorageAdapter, against the same
// adapter called directly with ciphertext, on one database in the same run.
// Token load (installations.get), token save (upsert / save) and a claim
// (claimOnce: a used OAuth state, code or launch-token id), per operation.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { generateKey } from '../../dist/crypto/index.js';
import { createStorage, openBuiltinAdapter } from '../../dist/storage/index.js';
import { compare, report } from '../lib.js';

const OPS = 400;
const ROUNDS = 7;
const PG_ADMIN = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Mean µs per operation of `op(i)` over OPS sequential calls. */
function perOp(op) {
  return async () => {
    const t0 = performance.now();
    for (let i = 0; i < OPS; i++) await op(i);
    return ((performance.now() - t0) * 1000) / OPS;
  };
}

async function measure(label, databaseUrl) {
  const kit = await createStorage({ databaseUrl, encryptionKeys: [generateKey()] });
  const adapter = await openBuiltinAdapter({ databaseUrl });
  try {
    const tokens = {
      scopes: ['read_products'],
      accessToken: `at_${randomBytes(24).toString('base64url')}`,
      refreshToken: `rt_${randomBytes(24).toString('base64url')}`,
      accessTokenExpiresAt: new Date(Date.now() + 3_600_000),
    };
    await kit.installations.upsert('store-bench', tokens);
    const sealed = await adapter.installations.get('store-bench');
    const meta = { platformInstalledAt: null, now: new Date() };
    const load = await compare(
      ROUNDS,
      perOp(() => kit.installations.get('store-bench')),
      perOp(() => adapter.installations.get('store-bench')),
    );
    const save = await compare(
      ROUNDS,
      perOp(() => kit.installations.upsert('store-save', tokens)),
      perOp(() => adapter.installations.save('store-raw', sealed, meta)),
    );
    let n = 0;
    const until = () => new Date(Date.now() + 600_000);
    const claim = await compare(
      ROUNDS,
      perOp(() => kit.claimOnce('bench', `k${++n}`, until())),
      perOp(() => adapter.claimOnce('bench', `a${++n}`, until(), new Date())),
    );
    for (const [what, r] of [
      ['token load', load],
      ['token save', save],
      ['claim once', claim],
    ]) {
      report(`storage seam, ${label}, ${what} (µs per op)`, {
        kit_median: r.a,
        adapter_median: r.b,
        ratio: r.ratio,
        paired_ratio: r.pairedRatio,
      });
    }
  } finally {
    await adapter.close();
    await kit.close();
  }
}

const dir = mkdtempSync(join(tmpdir(), 'bench-seam-'));
try {
  await measure('SQLite file', `file:${join(dir, 'seam.db')}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const admin = new pg.Client({ connectionString: PG_ADMIN });
const name = `bench_seam_${Date.now().toString(36)}`;
try {
  await admin.connect();
} catch {
  console.log('storage seam, Postgres: skipped (no server at TEST_POSTGRES_URL)');
  process.exit(0);
}
try {
  await admin.query(`create database "${name}"`);
  const url = new URL(PG_ADMIN);
  url.pathname = `/${name}`;
  await measure('Postgres', url.toString());
} finally {
  await admin.query(`drop database if exists "${name}" with (force)`);
  await admin.end();
}
