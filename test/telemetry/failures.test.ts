/**
 * An unexpected error inside the kit's own layers (here: the app's session
 * store failing under kit.authenticated()) is answered without detail by the kit's error handler and
 * counted under `store_app.failures`, so an operator's dashboard sees it.
 */
import { createHmac, randomBytes } from 'node:crypto';
import express from 'express';
import session from 'express-session';
import { pino } from 'pino';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StorageError } from '../../src/errors/index.js';
import { storeApp } from '../../src/store-app.js';
import { offlineKitOptions } from '../helpers/config.js';
import { type Otel, registerOtel, total } from './otel.js';

let otel: Otel;
beforeAll(() => {
  otel = registerOtel();
});
afterAll(async () => {
  await otel?.shutdown();
});

/** A session store whose reads fail with `error`. */
class FailingStore extends session.Store {
  constructor(private readonly error: Error) {
    super();
  }
  get(_sid: string, cb: (err: unknown) => void) {
    cb(this.error);
  }
  set(_sid: string, _s: unknown, cb?: (err?: unknown) => void) {
    cb?.();
  }
  destroy(_sid: string, cb?: (err?: unknown) => void) {
    cb?.();
  }
}

async function appWith(store: session.Store) {
  const secret = randomBytes(32).toString('base64url');
  const kit = await storeApp(
    offlineKitOptions({
      environment: 'test',
      session: { secret, store, cookieName: 'sak_test' },
      logger: { instance: pino({ level: 'silent' }) },
    }),
  );
  const app = express();
  app.use(kit.middleware());
  // The kit's session is read where the kit needs it: behind kit.authenticated().
  app.get('/page', kit.authenticated(), (_req, res) => {
    res.send('never reached');
  });
  // A session cookie signed as express-session signs it, so the store is asked.
  const sid = 'sid-1';
  const signed = `s:${sid}.${createHmac('sha256', secret).update(sid).digest('base64').replace(/=+$/, '')}`;
  return { kit, app, cookie: `sak_test=${encodeURIComponent(signed)}` };
}

const failures = async (type: string) =>
  total(await otel.counter('store_app.failures'), {
    'store_app.operation': 'request',
    'error.type': type,
  });

describe('store_app.failures for unexpected errors', () => {
  it('a session store that throws: 500 INTERNAL_ERROR without detail, counted as a request failure', async () => {
    const { kit, app, cookie } = await appWith(
      new FailingStore(new Error('redis: secret-host:6379 refused')),
    );
    try {
      const before = await failures('INTERNAL_ERROR');
      const res = await request(app)
        .get('/page')
        .set('cookie', cookie)
        .set('accept', 'application/json')
        .expect(500);
      expect(res.body).toEqual({ code: 'INTERNAL_ERROR', message: expect.any(String) });
      expect(JSON.stringify(res.body)).not.toContain('secret-host');
      expect(await failures('INTERNAL_ERROR')).toBe(before + 1);
    } finally {
      await kit.close();
    }
  });

  it('a database that went away under the session store: 503 STORAGE_UNAVAILABLE, counted with that code', async () => {
    const { kit, app, cookie } = await appWith(new FailingStore(new StorageError('db down')));
    try {
      const before = await failures('STORAGE_UNAVAILABLE');
      await request(app).get('/page').set('cookie', cookie).expect(503);
      expect(await failures('STORAGE_UNAVAILABLE')).toBe(before + 1);
    } finally {
      await kit.close();
    }
  });
});
