/**
 * Stopping an instance (docs/operations.md) over real processes: two app
 * instances (the built package, test/fixtures/app-instance.mjs, whose SIGTERM
 * runs `kit.shutdownOnSignals({ server })`) on one Postgres database, under
 * keep-alive load (an `http.Agent` per instance, as a load balancer keeps its
 * upstream connections), with uninstall webhooks from the local platform in
 * flight. One instance gets SIGTERM.
 *
 * What must hold: every request the stopping instance accepted is answered
 * (and its row written: no 500 from a closed pool), health answered 503
 * "draining" before the instance stopped listening, its answers said
 * `Connection: close`, it exited within its deadline, and every acknowledged
 * purge ran exactly once. A request that was never accepted (the connection
 * refused once it stopped listening, or a reused idle socket it closed as the
 * request was sent) goes to the other instance, as a load balancer retries it.
 * Run `npm run build` first.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import http from 'node:http';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Platform, startPlatform } from '../../src/platform/index.js';
import { installStore } from '../../src/testing/index.js';
import {
  appBehindProxy,
  type InstanceConfig,
  type LoadBalancer,
  requireBuild,
  startProxy,
} from '../fixtures/instances.js';
import { createTempDatabase, type TempDatabase } from '../helpers/postgres.js';

const here = dirname(fileURLToPath(import.meta.url));
const DEADLINE_MS = 8_000;
/** Stores uninstalled while one instance stops. */
const UNINSTALLS = 24;

interface Proc {
  child: ChildProcess;
  port: number;
  /** Resolves with the exit code and when it came. */
  exited: Promise<{ code: number | null; at: number }>;
}

async function startApp(config: InstanceConfig): Promise<Proc> {
  requireBuild();
  const child = fork(join(here, '../fixtures/app-instance.mjs'), [], {
    env: { ...process.env, SAK_APP_CONFIG: JSON.stringify(config) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = once(child, 'exit').then(([code]) => ({
    code: code as number | null,
    at: performance.now(),
  }));
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (m: { port: number }) => resolve(m.port));
    child.once('exit', (code) => reject(new Error(`app exited during start (${code})`)));
  });
  return { child, port, exited };
}

interface Answer {
  status?: number;
  connection?: string;
  body?: string;
  /** The request never reached a handler: refused, or a reused socket closed under it. */
  notAccepted?: string;
  error?: string;
}

/** One request over `agent`, classified as a load balancer sees it. */
function send(
  agent: http.Agent,
  port: number,
  method: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<Answer> {
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, agent, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, body }),
      );
      res.on('error', (err) => resolve({ error: err.message }));
    });
    req.on('error', (err: NodeJS.ErrnoException) => {
      // Refused, or reset while connecting (the listener closed with it in its backlog).
      if (err.code === 'ECONNREFUSED' || (err.code === 'ECONNRESET' && err.syscall === 'connect')) {
        resolve({ notAccepted: 'refused' });
      }
      // Node's documented keep-alive race: the server closed an idle socket as the
      // request went out on it. No byte of an answer came: the request was not taken.
      else if (req.reusedSocket && err.code === 'ECONNRESET') resolve({ notAccepted: 'reset' });
      else resolve({ error: `${err.code ?? ''} ${err.message}` });
    });
    req.end();
  });
}

describe('SIGTERM under keep-alive load, with uninstalls in flight, on two instances (Postgres)', () => {
  let db: TempDatabase;
  let pool: pg.Pool;
  let platform: Platform;
  let proxy: LoadBalancer;
  let config: InstanceConfig;
  let a: Proc;
  let b: Proc;
  let loadStore: string;
  let loadToken: string;
  const uninstalled: string[] = [];

  beforeAll(async () => {
    db = await createTempDatabase('sak_shutdown');
    pool = new pg.Pool({ connectionString: db.url, max: 2 });
    // The database is dropped WITH (FORCE) at the end.
    pool.on('error', () => undefined);
    platform = await startPlatform({
      logger: false,
      rateLimit: { concurrent: 500, perMinute: 100_000 },
      webhookRetrySchedule: [0.2, 0.5, 1, 2],
    });
    proxy = await startProxy();
    config = {
      ...appBehindProxy(platform, proxy, 'Shutdown', db.url),
      // Purges take a while and are acknowledged (202) before they finish.
      purgeDelayMs: 300,
      ackTimeoutMs: 150,
      purgeHorizonMs: 0,
      health: true,
      shutdownDeadlineMs: DEADLINE_MS,
      // Longer than the balancer takes to see "draining" (its probe every 50 ms, on a
      // loaded 2-core machine): it stops sending before A stops listening.
      keepListeningMs: 1_000,
    };
    a = await startApp(config);
    b = await startApp(config);
    proxy.setTargets([a.port, b.port]);
    const tokenOf = async (storeId: string) => {
      const res = await fetch(`http://127.0.0.1:${b.port}/test/session-token/${storeId}`);
      return (await res.json()) as { token: string };
    };
    const kit = {
      sessionToken: async (storeId: string) => ({
        ...(await tokenOf(storeId)),
        expiresAt: new Date(),
      }),
      client: () => undefined as never,
    };
    const load = await installStore({ platform, appUrl: proxy.url, kit });
    loadStore = load.storeId;
    loadToken = load.sessionToken;
    for (let i = 0; i < UNINSTALLS; i++) {
      const { storeId } = await installStore({ platform, appUrl: proxy.url, kit });
      await fetch(`http://127.0.0.1:${b.port}/test/seed/${storeId}?rows=20`, { method: 'POST' });
      uninstalled.push(storeId);
    }
  }, 120_000);

  afterAll(async () => {
    for (const p of [a, b]) {
      if (p && p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    }
    await proxy?.close();
    await platform?.close();
    await pool?.end();
    await db?.drop();
  }, 30_000);

  it('0 failed accepted requests, no 5xx, health 503 draining first, exit within the deadline, each purge once', async () => {
    const agents = new Map([
      // No socket limit: a request queued for a socket the agent frees is not marked
      // `reusedSocket` by Node, which would hide the keep-alive race below.
      [a.port, new http.Agent({ keepAlive: true })],
      [b.port, new http.Agent({ keepAlive: true })],
    ]);
    // The load balancer: round-robin over the instances in rotation; a request not
    // accepted by one goes to the other.
    let rotation = [a.port, b.port];
    let next = 0;
    let signalledAt = Number.POSITIVE_INFINITY;
    let running = true;
    let n = 0;
    const answered: Array<
      { n: number; port: number; delayMs: number; sentAt: number; at: number } & Answer
    > = [];
    const notAccepted: Answer[] = [];
    async function worker(): Promise<void> {
      while (running) {
        for (;;) {
          // A new id per try: a request not accepted must have written nothing.
          const id = ++n;
          const delayMs = id % 7 === 0 ? 400 : id % 3 === 0 ? 60 : 0;
          const port = rotation[next++ % rotation.length]!;
          const sentAt = performance.now();
          const r = await send(
            agents.get(port)!,
            port,
            'POST',
            `/api/records?n=${id}&delayMs=${delayMs}`,
            { authorization: `Bearer ${loadToken}`, accept: 'application/json' },
          );
          if (r.notAccepted) {
            notAccepted.push(r);
            continue;
          }
          answered.push({ ...r, n: id, port, delayMs, sentAt, at: performance.now() });
          break;
        }
      }
    }
    // The balancer's health probe of A (its own keep-alive connection): out of rotation on failure.
    const probes: Array<{ at: number } & Answer> = [];
    const probeAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const prober = (async () => {
      while (running) {
        const r = await send(probeAgent, a.port, 'GET', '/healthz');
        probes.push({ ...r, at: performance.now() });
        if (r.status !== 200) {
          // Out of rotation: the load and the platform's webhooks (the proxy) go to B only.
          rotation = [b.port];
          proxy.setTargets([b.port]);
        }
        await sleep(50);
      }
    })();

    const workers = Array.from({ length: 12 }, () => worker());
    await sleep(600);
    // Uninstalls from the platform, spread over the signal; half reach A through the proxy.
    const uninstalls = (async () => {
      for (const storeId of uninstalled) {
        platform.uninstall({ storeId, clientId: config.clientId });
        await sleep(40);
      }
    })();
    // Slow requests A has accepted when the signal comes: their answers go out while it drains.
    const slowSentAt = performance.now();
    const slow = Array.from({ length: 4 }, () => {
      const id = ++n;
      return send(agents.get(a.port)!, a.port, 'POST', `/api/records?n=${id}&delayMs=1500`, {
        authorization: `Bearer ${loadToken}`,
      }).then((r) => ({ ...r, n: id }));
    });
    await sleep(300);
    signalledAt = performance.now();
    a.child.kill('SIGTERM');
    // A process that does not exit by itself is reported, then killed.
    const exit = await Promise.race([
      a.exited,
      sleep(DEADLINE_MS + 2_000).then(() => ({ code: 'still running', at: performance.now() })),
    ]);
    a.child.kill('SIGKILL');
    const exitMs = exit.at - signalledAt;
    // B goes on serving a while after A left.
    await sleep(500);
    running = false;
    await Promise.all([...workers, prober, uninstalls]);
    for (const agent of [...agents.values(), probeAgent]) agent.destroy();
    const deliveries = await platform.waitForDeliveries({
      clientId: config.clientId,
      count: UNINSTALLS,
      timeoutMs: 20_000,
    });

    // 0 failed accepted requests: every accepted request was answered 200, none 5xx.
    const failed = answered.filter((r) => r.status !== 200);
    expect(
      failed.map(
        (r) =>
          `${r.port === a.port ? 'A' : 'B'} ${r.status ?? r.error} ${r.body ?? ''} sent ${Math.round(r.sentAt - signalledAt)} ms after the signal, failed ${Math.round(r.at - signalledAt)}; exit ${Math.round(exitMs)}`,
      ),
    ).toEqual([]);
    // The process exited on its own, everything drained (exit 0), within its deadline.
    expect(exit.code).toBe(0);
    expect(exitMs).toBeLessThan(DEADLINE_MS);
    // Readiness failed first: 503 "draining" from A before it stopped answering.
    const draining = probes.filter((p) => p.status === 503);
    expect(draining.length).toBeGreaterThan(0);
    expect(JSON.parse(draining[0]!.body!)).toEqual({ status: 'draining' });
    const drainSeen = draining[0]!.at;
    expect(drainSeen).toBeLessThan(exit.at);
    // The slow requests A had accepted before it drained (their answers written 1.5 s
    // after they were sent, after "draining" was seen): each answered 200 with
    // `Connection: close`, so the client takes its next request elsewhere.
    expect(slowSentAt + 1500).toBeGreaterThan(drainSeen);
    const slowAnswers = await Promise.all(slow);
    expect(slowAnswers.map((r) => [r.status, r.connection])).toEqual(
      slow.map(() => [200, 'close']),
    );
    answered.push(
      ...slowAnswers.map((r) => ({ ...r, port: a.port, delayMs: 1500, sentAt: slowSentAt, at: 0 })),
    );
    // So did every other answer of A written after it was seen draining.
    const late = answered.filter(
      (r) => r.port === a.port && r.delayMs > 0 && r.sentAt + r.delayMs > drainSeen,
    );
    expect(late.filter((r) => r.connection !== 'close')).toEqual([]);
    // Every answered request wrote its row, and no request wrote one without its answer.
    const rows = await pool.query<{ n: number }>(
      'SELECT n FROM app_records WHERE store_id = $1 ORDER BY n',
      [loadStore],
    );
    expect(rows.rows.map((r) => r.n)).toEqual(answered.map((r) => r.n).sort((x, y) => x - y));

    // Every uninstall acknowledged; each purge ran exactly once (one audit row), all done.
    expect(
      deliveries
        .filter((d) => d.status !== 'succeeded')
        .map((d) => d.attempts.map((x) => x.status ?? x.error)),
    ).toEqual([]);
    const one = async (q: string, params: unknown[] = []) =>
      Number((await pool.query<{ n: string }>(q, params)).rows[0]!.n);
    // Purges A leased but had not started are left to the outbox: B works them once
    // A's lease (5 s) ends.
    for (let i = 0; i < 150; i++) {
      if ((await one('SELECT count(*) AS n FROM store_app_pending_purges')) === 0) break;
      await sleep(100);
    }
    expect(await one('SELECT count(*) AS n FROM store_app_pending_purges')).toBe(0);
    for (const storeId of uninstalled) {
      expect(
        await one('SELECT count(*) AS n FROM store_app_purge_audit WHERE store_id = $1', [storeId]),
      ).toBe(1);
      expect(
        await one('SELECT count(*) AS n FROM app_records WHERE store_id = $1', [storeId]),
      ).toBe(0);
      expect(
        await one('SELECT count(*) AS n FROM store_app_installations WHERE store_id = $1', [
          storeId,
        ]),
      ).toBe(0);
    }
    const effects = await pool.query<{ webhook_id: string; n: string }>(
      'SELECT webhook_id, count(*) AS n FROM webhook_effects GROUP BY webhook_id',
    );
    expect(effects.rows.filter((r) => Number(r.n) !== 1)).toEqual([]);
    expect(effects.rows.length).toBe(UNINSTALLS);
    console.log(
      `shutdown: exit ${Math.round(exitMs)} ms after SIGTERM; ${answered.length} answered ` +
        `(${late.length} written by A while draining), ${notAccepted.length} not accepted and retried ` +
        `(${notAccepted.filter((r) => r.notAccepted === 'reset').length} reused sockets), ` +
        `${deliveries.reduce((s, d) => s + d.attempts.length, 0)} delivery attempts for ${UNINSTALLS} uninstalls`,
    );
  }, 60_000);

  it('a request running past the deadline is cut and the process still exits on time', async () => {
    const c = await startApp({ ...config, shutdownDeadlineMs: 2_000 });
    const agent = new http.Agent({ keepAlive: true });
    const slow = send(agent, c.port, 'POST', '/api/records?n=1000000&delayMs=20000', {
      authorization: `Bearer ${loadToken}`,
    });
    await sleep(200);
    const signalledAt = performance.now();
    c.child.kill('SIGTERM');
    const exit = await c.exited;
    // Cut at the deadline: exit 1 says something was cut, and it came on time.
    expect(exit.code).toBe(1);
    expect(exit.at - signalledAt).toBeLessThan(2_000 + 500);
    const r = await slow;
    expect(r.status).toBeUndefined();
    agent.destroy();
  }, 30_000);
});
