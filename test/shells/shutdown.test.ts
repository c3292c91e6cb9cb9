/**
 * `kit.shutdown()` through both shells (docs/operations.md), over real sockets and
 * a SQLite file: Express (`kit.middleware()` counts every request in flight) and
 * Hono on @hono/node-server (`kit.track(app.fetch)` counts them, `kit.fetch` answers
 * the kit's routes). Neither server is watched (`shutdownOnSignals`): what is
 * tested is the shells' own tracking. The process-level test (SIGTERM, two
 * instances, Postgres) is test/multi-instance/shutdown-postgres.test.ts.
 */
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import http, { createServer, type Server } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createAdaptorServer } from '@hono/node-server';
import express from 'express';
import { Hono } from 'hono';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors/index.js';
import type { StoreAppKit } from '../../src/kit.js';
import { storeApp } from '../../src/store-app.js';
import { offlineKitOptions } from '../helpers/config.js';
import { SHELLS, type ShellName } from '../helpers/shell-parity.js';

const dir = mkdtempSync(join(tmpdir(), 'sak-shutdown-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

interface App {
  kit: StoreAppKit;
  server: Server;
  url: string;
  port: number;
}

/**
 * The same app on either shell: the kit's routes (health at /healthz) and
 * GET /slow?ms=N, which waits N ms and then reads the database.
 */
async function startApp(shell: ShellName, shutdown = {}): Promise<App> {
  const kit = (await storeApp(
    offlineKitOptions({
      environment: 'test',
      health: { path: '/healthz', cacheMs: 0 },
      shutdown,
      session: { secret: 's'.repeat(32) },
      storage: { databaseUrl: join(dir, `${shell}-${++files}.db`) },
    }),
  )) as StoreAppKit;
  const slow = async (ms: number) => {
    await sleep(ms);
    // Storage must still be open: the shutdown waits for this request.
    return (await kit.installations.list()).length;
  };
  let server: Server;
  if (shell === 'express') {
    const app = express();
    app.use(kit.middleware());
    app.get('/slow', async (req, res) => {
      res.json({ installations: await slow(Number(req.query['ms'])) });
    });
    server = createServer(app);
  } else {
    const app = new Hono();
    app.use('*', async (c, next) => {
      const answered = await kit.fetch(c.req.raw, { remoteAddress: '127.0.0.1' });
      if (answered) return answered;
      await next();
    });
    app.get('/slow', async (c) => c.json({ installations: await slow(Number(c.req.query('ms'))) }));
    server = createAdaptorServer({ fetch: kit.track(app.fetch) }) as Server;
  }
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return { kit, server, port, url: `http://127.0.0.1:${port}` };
}

interface Answer {
  status: number;
  connection: string | undefined;
  body: unknown;
  at: number;
}

function get(agent: http.Agent, app: App, path: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port: app.port, path, agent }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          body += c;
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            connection: res.headers.connection,
            body: JSON.parse(body || 'null'),
            at: performance.now(),
          }),
        );
      })
      .on('error', reject);
  });
}

describe.each(SHELLS)('kit.shutdown() on the %s shell', (shell) => {
  it('health answers 503 "draining" at once and every answer says Connection: close', async () => {
    const app = await startApp(shell, { keepListeningMs: 1_000 });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const before = await get(agent, app, '/healthz');
      expect(before).toMatchObject({ status: 200, body: { status: 'ok' } });
      expect(before.connection).toBe('keep-alive');
      const done = app.kit.shutdown({ server: app.server });
      // The kept-alive socket of the probe is still open while the server listens.
      const probe = await get(agent, app, '/healthz');
      expect(probe).toMatchObject({
        status: 503,
        body: { status: 'draining' },
        connection: 'close',
      });
      expect((await app.kit.health()).status).toBe('draining');
      // An app route during the drain: answered, and the client told to go elsewhere.
      const appRoute = await get(agent, app, '/slow?ms=0');
      expect(appRoute).toMatchObject({ status: 200, connection: 'close' });
      expect(await done).toMatchObject({ drained: true, cut: 0, closed: true });
    } finally {
      agent.destroy();
    }
  });

  it('the server watched, a probe and an app request pipelined while draining: both answered, only the last says close', async () => {
    const app = await startApp(shell, { deadlineMs: 5_000, keepListeningMs: 1_500 });
    const remove = app.kit.shutdownOnSignals({
      server: app.server,
      signals: ['SIGUSR2'],
      exit: false,
    });
    try {
      const done = app.kit.shutdown({ server: app.server });
      // The kit's own answer (health, 503 draining) first: on the Fetch shell it is a
      // Response the kit builds, which must not carry a close of its own.
      const socket = net.connect(app.port, '127.0.0.1', () =>
        socket.write(
          'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /slow?ms=0 HTTP/1.1\r\nHost: x\r\n\r\n',
        ),
      );
      let received = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => {
        received += chunk;
      });
      await Promise.race([once(socket, 'close'), sleep(3_000).then(() => socket.destroy())]);
      const answers = received.split(/(?=HTTP\/1\.1 \d{3})/);
      expect(answers.map((a) => a.match(/HTTP\/1\.1 \d+/)?.[0])).toEqual([
        'HTTP/1.1 503',
        'HTTP/1.1 200',
      ]);
      expect(answers[1]).toContain('{"installations":0}');
      expect(answers.map((a) => /^connection: close$/im.test(a))).toEqual([false, true]);
      expect(await done).toMatchObject({ drained: true, cut: 0, closed: true });
    } finally {
      remove();
      app.server.close();
    }
  });

  it('waits for a request in flight before closing storage: 200, never a closed database', async () => {
    const app = await startApp(shell);
    const agent = new http.Agent({ keepAlive: true });
    try {
      const inFlight = get(agent, app, '/slow?ms=600');
      await sleep(100);
      const result = await app.kit.shutdown({ server: app.server });
      const finishedAt = performance.now();
      const answer = await inFlight;
      // Answered (after its database read), with Connection: close, before the kit closed.
      expect(answer).toMatchObject({
        status: 200,
        body: { installations: 0 },
        connection: 'close',
      });
      expect(answer.at).toBeLessThanOrEqual(finishedAt);
      expect(result).toMatchObject({ drained: true, cut: 0, closed: true });
      // The server no longer accepts connections.
      await expect(get(agent, app, '/healthz')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    } finally {
      agent.destroy();
    }
  });

  it('cuts what still runs at the deadline and still closes within it', async () => {
    const app = await startApp(shell, { deadlineMs: 1_000 });
    const agent = new http.Agent({ keepAlive: true });
    try {
      const inFlight = get(agent, app, '/slow?ms=5000');
      await sleep(100);
      const started = performance.now();
      const result = await app.kit.shutdown({ server: app.server });
      expect(result).toMatchObject({ drained: false, cut: 1, closed: true });
      expect(performance.now() - started).toBeLessThan(1_000 + 200);
      await expect(inFlight).rejects.toMatchObject({ code: 'ECONNRESET' });
    } finally {
      agent.destroy();
    }
  });

  it('shutdownOnSignals: the signal starts it; the watched server says close and waits', async () => {
    const app = await startApp(shell);
    const agent = new http.Agent({ keepAlive: true });
    const remove = app.kit.shutdownOnSignals({
      server: app.server,
      signals: ['SIGUSR2'],
      exit: false,
    });
    try {
      const inFlight = get(agent, app, '/slow?ms=400');
      await sleep(100);
      process.emit('SIGUSR2', 'SIGUSR2');
      // The shutdown the signal started (one per kit: this call returns it).
      const result = await app.kit.shutdown();
      expect(await inFlight).toMatchObject({ status: 200, connection: 'close' });
      expect(result).toMatchObject({ drained: true, cut: 0, closed: true });
    } finally {
      remove();
      agent.destroy();
    }
  });

  it('refuses a deadline it cannot keep, naming the setting, before anything stops', async () => {
    const app = await startApp(shell);
    try {
      await expect(app.kit.shutdown({ server: app.server, deadlineMs: 10 })).rejects.toThrow(
        ConfigError,
      );
      await expect(app.kit.shutdown({ deadlineMs: 10 })).rejects.toThrow(
        /shutdown\.deadlineMs.*from 1000 to 600000/,
      );
      await expect(app.kit.shutdown({ deadlineMs: 2_000, keepListeningMs: 1_500 })).rejects.toThrow(
        /shutdown\.keepListeningMs.*1000 ms before shutdown\.deadlineMs/,
      );
      // Nothing started: health still answers ok.
      expect((await app.kit.health()).status).toBe('ok');
    } finally {
      await app.kit.shutdown({ server: app.server });
    }
  });
});

describe('kit.shutdown() on Express without the server (the kit counts its own requests)', () => {
  it('a request under way when draining begins is waited for and told Connection: close', async () => {
    const app = await startApp('express');
    const agent = new http.Agent({ keepAlive: true });
    try {
      // Answered once before: the response of a finished request is no longer counted.
      expect(await get(agent, app, '/slow?ms=0')).toMatchObject({ connection: 'keep-alive' });
      const inFlight = get(agent, app, '/slow?ms=500');
      await sleep(100);
      // No server given: only the kit's own count of its requests holds the close back.
      const result = await app.kit.shutdown();
      expect(await inFlight).toMatchObject({
        status: 200,
        body: { installations: 0 },
        connection: 'close',
      });
      expect(result).toMatchObject({ drained: true, cut: 0, closed: true });
    } finally {
      agent.destroy();
      app.server.close();
    }
  });
});

describe('kit.shutdown() on Express: what is in flight on a connection', () => {
  /** Raw HTTP/1.1 over one socket: resolves with the bytes once `answers` bodies arrived. */
  function rawExchange(port: number, requests: string, answers: number): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1', () => socket.write(requests));
      let received = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => {
        received += chunk;
        if ((received.match(/\{"installations":\d+\}/g) ?? []).length < answers) return;
        socket.destroy();
        resolve(received);
      });
      socket.on('close', () => resolve(received));
      socket.on('error', reject);
    });
  }

  it.each([
    ['kit.middleware() counting', false],
    ['the server watched (shutdownOnSignals)', true],
  ])(
    'two pipelined requests (%s): the shutdown waits for the slow first one, and both answers go out',
    async (_name, watchedServer) => {
      const app = await startApp('express', { deadlineMs: 5_000 });
      const remove = watchedServer
        ? app.kit.shutdownOnSignals({ server: app.server, signals: ['SIGUSR2'], exit: false })
        : undefined;
      try {
        // The second answer is ready at once but queued behind the first (HTTP/1 answers in
        // order): the connection is under way until its newest answer closes, and a
        // `Connection: close` on the first answer would make Node drop the second.
        const exchange = rawExchange(
          app.port,
          'GET /slow?ms=600 HTTP/1.1\r\nHost: x\r\n\r\nGET /slow?ms=0 HTTP/1.1\r\nHost: x\r\n\r\n',
          2,
        );
        await sleep(150);
        const result = await app.kit.shutdown(watchedServer ? { server: app.server } : {});
        const received = await exchange;
        // The first reads the database after the shutdown began: storage was still open for it.
        const answers = received.match(/HTTP\/1\.1 \d+/g);
        expect(answers).toEqual(['HTTP/1.1 200', 'HTTP/1.1 200']);
        expect(received.match(/\{"installations":0\}/g)).toHaveLength(2);
        expect(result).toMatchObject({ drained: true, cut: 0, closed: true });
      } finally {
        remove?.();
        app.server.close();
      }
    },
  );

  it.each([
    ['kit.middleware() counting', false],
    ['the server watched (shutdownOnSignals)', true],
  ])(
    'two pipelined requests arriving while draining (%s): both answered, only the last says Connection: close',
    async (_name, watchedServer) => {
      const app = await startApp('express', { deadlineMs: 5_000, keepListeningMs: 1_500 });
      const remove = watchedServer
        ? app.kit.shutdownOnSignals({ server: app.server, signals: ['SIGUSR2'], exit: false })
        : undefined;
      try {
        const done = app.kit.shutdown(watchedServer ? { server: app.server } : {});
        // A new connection while the server still listens: the first answer is slow, the
        // second ready at once and queued behind it. Before, both carried Connection: close
        // and Node, sending the first as the connection's last, dropped the second.
        const received = await rawExchange(
          app.port,
          'GET /slow?ms=300 HTTP/1.1\r\nHost: x\r\n\r\nGET /slow?ms=0 HTTP/1.1\r\nHost: x\r\n\r\n',
          2,
        );
        const heads = received.split(/\r\n\r\n\{"installations":\d+\}/).slice(0, 2);
        expect(heads.map((h) => h.match(/HTTP\/1\.1 \d+/)?.[0])).toEqual([
          'HTTP/1.1 200',
          'HTTP/1.1 200',
        ]);
        expect(heads.map((h) => /^connection: close$/im.test(h))).toEqual([false, true]);
        expect(await done).toMatchObject({ drained: true, cut: 0, closed: true });
      } finally {
        remove?.();
        app.server.close();
      }
    },
  );

  it('two kits in one app: each waits for the request under way on a connection', async () => {
    const kits = [] as StoreAppKit[];
    for (const name of ['first', 'second']) {
      kits.push(
        (await storeApp(
          offlineKitOptions({
            environment: 'test',
            shutdown: { deadlineMs: 4_000 },
            session: { secret: 's'.repeat(32) },
            storage: { databaseUrl: join(dir, `${name}-${++files}.db`) },
          }),
        )) as StoreAppKit,
      );
    }
    const [first, second] = kits as [StoreAppKit, StoreAppKit];
    const app = express();
    app.use(first.middleware());
    app.use(second.middleware());
    app.get('/slow', async (_req, res) => {
      await sleep(400);
      // The second kit's storage must still be open: its shutdown waits for this request.
      res.json({ installations: (await second.installations.list()).length });
    });
    const server = createServer(app).listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    const agent = new http.Agent({ keepAlive: true });
    try {
      const target = { kit: second, server, port, url: `http://127.0.0.1:${port}` };
      const inFlight = get(agent, target, '/slow');
      await sleep(100);
      const result = await second.shutdown();
      expect(await inFlight).toMatchObject({ status: 200, body: { installations: 0 } });
      expect(result).toMatchObject({ drained: true, cut: 0, closed: true });
    } finally {
      agent.destroy();
      server.close();
      await first.close();
    }
  });

  it('a request whose client left before the kit saw it holds nothing back', async () => {
    const kit = (await storeApp(
      offlineKitOptions({
        environment: 'test',
        shutdown: { deadlineMs: 4_000 },
        session: { secret: 's'.repeat(32) },
        storage: { databaseUrl: join(dir, `gone-${++files}.db`) },
      }),
    )) as StoreAppKit;
    const app = express();
    let reachedKit!: () => void;
    const kitSaw = new Promise<void>((resolve) => {
      reachedKit = resolve;
    });
    // The app's own middleware before the kit: it waits until the client has gone.
    app.use((req, _res, next) => {
      req.socket.once('close', () => {
        next();
        reachedKit();
      });
    });
    app.use(kit.middleware());
    app.get('/late', (_req, res) => {
      res.json({ ok: true });
    });
    const server = createServer(app).listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    try {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.write('GET /late HTTP/1.1\r\nHost: x\r\n\r\n');
        setTimeout(() => socket.destroy(), 50);
      });
      socket.on('error', () => {});
      await kitSaw;
      const started = performance.now();
      const result = await kit.shutdown();
      // Counted, it would never be released (its response closed before the kit listened).
      expect(result).toMatchObject({ drained: true, cut: 0, closed: true });
      expect(performance.now() - started).toBeLessThan(2_000);
    } finally {
      server.close();
    }
  });
});

describe('kit.middleware() mounted twice (a router of the app mounts it again)', () => {
  it('counts each request once: a shutdown after the answers finds nothing in flight', async () => {
    const kit = (await storeApp(
      offlineKitOptions({
        environment: 'test',
        health: { path: '/healthz', cacheMs: 0 },
        shutdown: { deadlineMs: 3_000 },
        session: { secret: 's'.repeat(32) },
        storage: { databaseUrl: join(dir, `twice-${++files}.db`) },
      }),
    )) as StoreAppKit;
    const app = express();
    app.use(kit.middleware());
    const api = express.Router();
    api.use(kit.middleware());
    api.get('/ping', (_req, res) => {
      res.json({ ok: true });
    });
    app.use('/api', api);
    const server = createServer(app).listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    const agent = new http.Agent({ keepAlive: true });
    try {
      const target = { kit, server, port, url: `http://127.0.0.1:${port}` };
      for (let i = 0; i < 3; i++) {
        expect(await get(agent, target, '/api/ping')).toMatchObject({ status: 200 });
      }
      const started = performance.now();
      const result = await kit.shutdown({ server });
      // A request counted twice and released once would hold the drain to its deadline.
      expect(result).toMatchObject({ drained: true, cut: 0, closed: true });
      expect(performance.now() - started).toBeLessThan(1_500);
    } finally {
      agent.destroy();
    }
  });
});

describe('kit.shutdown() without a Node server (Bun.serve, Deno.serve)', () => {
  it('stops the host, waits for the tracked handler, then closes the kit', async () => {
    const app = await startApp('fetch');
    const handler = app.kit.track(async (_request: Request) => {
      await sleep(300);
      return new Response(String((await app.kit.installations.list()).length));
    });
    const pending = handler(new Request('http://127.0.0.1/slow'));
    await sleep(50);
    let stopped = 0;
    const result = await app.kit.shutdown({
      stop: () => {
        stopped++;
      },
    });
    const response = await pending;
    expect(await response.text()).toBe('0');
    expect(response.headers.get('connection')).toBe('close');
    expect(stopped).toBe(1);
    expect(result).toMatchObject({ drained: true, cut: 0, closed: true });
    app.server.close();
  });
});

describe('storeApp({ shutdown })', () => {
  it('fails at start on a deadline out of range, naming the option', async () => {
    await expect(
      storeApp(
        offlineKitOptions({
          environment: 'test',
          session: { secret: 's'.repeat(32) },
          shutdown: { deadlineMs: 0 },
        }),
      ),
    ).rejects.toThrow(/shutdown\.deadlineMs/);
  });
});
