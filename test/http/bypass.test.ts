/**
 * kit.middleware() hands the app's own paths to its pass-through layers
 * without a Router dispatch (issue 24): the kit's routes must still be found
 * however the Router would have matched them, and the app's paths must still
 * get the logger, headers, session and the kit's error answers.
 */
import { createHmac, randomBytes } from 'node:crypto';
import express from 'express';
import session from 'express-session';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { inOrder, kitPathTest } from '../../src/http/bypass.js';
import { storeApp } from '../../src/store-app.js';
import { offlineKitOptions } from '../helpers/config.js';

describe('which paths may reach a kit route', () => {
  const test = kitPathTest(['/auth', '/auth/callback', '/webhooks', '/healthz'])!;

  it('sends every spelling the Router could match to the Router', () => {
    for (const url of [
      '/auth',
      '/AUTH?store_id=s1',
      '/Auth/',
      '/auth/callback?code=x',
      '/auth/session-token',
      '/webhooks',
      '/WebHooks/',
      '/healthz',
      // absolute form: the Router parses it, so it decides
      'http://app.example/auth',
    ]) {
      expect(test(url), url).toBe(true);
    }
  });

  it("lets the app's own paths skip the dispatch", () => {
    for (const url of ['/', '/api/data', '/api/auth', '/favicon.ico', '/?auth=1']) {
      expect(test(url), url).toBe(false);
    }
  });

  it('falls back to the Router for every request when a route path is not literal', () => {
    expect(kitPathTest(['/auth', '/hooks/:id'])).toBeUndefined();
    expect(kitPathTest(['/auth', '/'])).toBeUndefined();
  });
});

describe('the layers run in order, as on the Router', () => {
  const onError: express.ErrorRequestHandler = (err, _req, res, _next) => {
    res.status(503).json({ caught: String((err as Error).message ?? err) });
  };
  const appWith = (layers: express.RequestHandler[]) => {
    const app = express();
    app.use(inOrder(layers, onError));
    app.get('/', (_req, res) => res.json({ reached: res.locals.seen ?? [] }));
    return app;
  };

  it('passes through every layer to the app', async () => {
    const mark =
      (n: number): express.RequestHandler =>
      (_req, res, next) => {
        res.locals.seen = [...(res.locals.seen ?? []), n];
        next();
      };
    const res = await request(appWith([mark(1), mark(2)])).get('/');
    expect(res.body).toEqual({ reached: [1, 2] });
  });

  it('an error passed, thrown or rejected reaches the error handler, not the app', async () => {
    const passed: express.RequestHandler = (_req, _res, next) => next(new Error('passed'));
    const thrown: express.RequestHandler = () => {
      throw new Error('thrown');
    };
    const rejected: express.RequestHandler = async () => {
      throw new Error('rejected');
    };
    for (const [layer, word] of [
      [passed, 'passed'],
      [thrown, 'thrown'],
      [rejected, 'rejected'],
    ] as const) {
      const res = await request(appWith([layer])).get('/');
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ caught: word });
    }
  });
});

describe('kit.middleware() on an app path', () => {
  it("answers the session store's failure with the kit's 503, logs per request, sets the headers", async () => {
    class FailingStore extends session.Store {
      get(_sid: string, cb: (err: unknown) => void) {
        cb(Object.assign(new Error('db down'), { code: 'ECONNREFUSED' }));
      }
      set(_sid: string, _s: unknown, cb?: (err?: unknown) => void) {
        cb?.();
      }
      destroy(_sid: string, cb?: (err?: unknown) => void) {
        cb?.();
      }
    }
    const secret = randomBytes(32).toString('base64url');
    const kit = await storeApp(
      offlineKitOptions({ session: { secret, store: new FailingStore() } }),
    );
    try {
      const app = express();
      app.use(kit.middleware());
      app.get('/api/data', (_req, res) => res.json({ hasLog: typeof res.locals.log?.info }));
      const ok = await request(app).get('/api/data');
      expect(ok.status).toBe(200);
      expect(ok.body).toEqual({ hasLog: 'function' });
      expect(ok.headers['content-security-policy']).toContain('frame-ancestors');
      // A signed cookie makes express-session ask the store, which fails.
      const signature = createHmac('sha256', secret)
        .update('abc')
        .digest('base64')
        .replace(/=+$/, '');
      const cookie = `${kit.config.session.cookieName}=${encodeURIComponent(`s:abc.${signature}`)}`;
      const down = await request(app)
        .get('/api/data')
        .set('accept', 'application/json')
        .set('cookie', cookie);
      expect(down.status).toBeGreaterThanOrEqual(500);
      expect(down.body.code).toMatch(/^(STORAGE_UNAVAILABLE|INTERNAL_ERROR)$/);
      expect(JSON.stringify(down.body)).not.toContain('db down');
    } finally {
      await kit.close();
    }
  });
});
