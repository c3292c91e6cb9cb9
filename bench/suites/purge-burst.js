// A burst of uninstalls (issue 22 §5): N `app.uninstalled` events at once from
// the local platform (its default retry schedule) to the kit over real
// sockets, with 2N installed stores, 5 app rows each, on SQLite (one file),
// Postgres and MariaDB. Figure: seconds until all N deliveries are
// acknowledged and all N purges (each with its scrub) are done.
// Target: N = 1,000 within 60 s on each database.
//
//   node bench/run.js purge-burst                       # N = 1000
//   PURGE_BURST_N=100 node bench/suites/purge-burst.js   # a quick run
//   PURGE_BURST_INSTANCES=2 …                            # two kits share the outbox
//   PURGE_BURST_DB=postgres …                            # one database (sqlite, postgres, mysql)
//   PURGE_BURST_KIT=/path/to/other/dist/index.js …       # the kit processes run another build (a baseline)
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { report } from '../lib.js';
import { setupPurgeBurst } from '../purge-burst-lib.js';

const N = Number(process.env.PURGE_BURST_N ?? 1000);
const STORES = Number(process.env.PURGE_BURST_STORES ?? 2 * N);
const INSTANCES = Number(process.env.PURGE_BURST_INSTANCES ?? 1);
const DBS = (process.env.PURGE_BURST_DB ?? 'sqlite,postgres,mysql').split(',');
const KIT_ENTRY = process.env.PURGE_BURST_KIT;
const TARGET_S = 60;
const PG_ADMIN = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const MY_ADMIN = process.env.TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test';

async function measure(label, databaseUrl) {
  const burst = await setupPurgeBurst({
    databaseUrl,
    stores: STORES,
    n: N,
    instances: INSTANCES,
    ...(KIT_ENTRY ? { kitEntry: KIT_ENTRY } : {}),
  });
  try {
    const r = await burst.run();
    const build = KIT_ENTRY ? `, kit ${KIT_ENTRY}` : '';
    report(
      `purge burst, ${label}, ${N} uninstalls of ${STORES} stores, ${INSTANCES} instance(s)${build}`,
      {
        'seconds to all acknowledged': r.ackSeconds,
        seconds: r.seconds,
        perSecond: N / r.seconds,
        acknowledged: r.acknowledged,
        pending: r.pending,
        failedAttempts: r.failedAttempts,
        failures: JSON.stringify(r.failures),
        rowsLeft: r.rowsLeft,
        installationsLeft: r.installationsLeft,
        'ratio to 60 s target': r.seconds / TARGET_S,
      },
    );
    if (r.pending > 0 || r.rowsLeft > 0 || r.installationsLeft > 0 || r.acknowledged !== N) {
      throw new Error(`burst incomplete: ${JSON.stringify(r)}`);
    }
  } finally {
    await burst.close();
  }
}

if (DBS.includes('sqlite')) {
  const dir = mkdtempSync(join(tmpdir(), 'sak-burst-'));
  try {
    await measure('SQLite', `file:${join(dir, 'burst.db')}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (DBS.includes('postgres')) {
  const admin = new pg.Client({ connectionString: PG_ADMIN });
  await admin.connect();
  const name = `sak_burst_${randomBytes(4).toString('hex')}`;
  await admin.query(`create database "${name}"`);
  const url = new URL(PG_ADMIN);
  url.pathname = `/${name}`;
  try {
    await measure('Postgres', url.toString());
  } finally {
    await admin.query(`drop database if exists "${name}" with (force)`);
    await admin.end();
  }
}

if (DBS.includes('mysql')) {
  const admin = await mysql.createConnection({ uri: MY_ADMIN });
  const name = `sak_burst_${randomBytes(4).toString('hex')}`;
  await admin.query(`create database \`${name}\``);
  const url = new URL(MY_ADMIN);
  url.pathname = `/${name}`;
  try {
    await measure('MariaDB', url.toString());
  } finally {
    await admin.query(`drop database if exists \`${name}\``);
    await admin.end();
  }
}
