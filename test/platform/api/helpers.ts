/**
 * The resource router in a tiny Express app, without the auth guard: the
 * calling store and scopes come from test headers. Plus a real-platform
 * installation helper for end-to-end checks through the guard.
 */
import express from 'express';
import supertest from 'supertest';
import { createResourceRouter, createStore } from '../../../src/platform/api/index.js';
import { type AdjustableClock, createClock } from '../../../src/platform/clock.js';
import { openPlatformDb, type PlatformDatabase } from '../../../src/platform/db/open.js';
import type { Platform } from '../../../src/platform/index.js';
import { SCOPE_NAMES } from '../../../src/platform/scopes.js';
import { install } from '../helpers.js';

/** Every scope an endpoint of the platform document needs (no endpoint needs manage_*). */
export const ALL_SCOPES = SCOPE_NAMES.filter((s) => !s.startsWith('manage_'));

export interface TestApi {
  app: express.Express;
  database: PlatformDatabase;
  deps: { db: PlatformDatabase['db']; clock: AdjustableClock };
  clock: AdjustableClock;
  storeId: string;
  /** A supertest agent for `storeId` (or another store) with the given scopes (default all). */
  as(opts?: { storeId?: string; scopes?: string[] }): ApiClient;
  close(): void;
}

type Req = supertest.Test;
export interface ApiClient {
  get(path: string): Req;
  post(path: string, body?: unknown): Req;
  put(path: string, body?: unknown): Req;
  delete(path: string): Req;
}

export function createTestApi(
  options: { seed?: boolean | number; currency?: string } = {},
): TestApi {
  const database = openPlatformDb();
  const clock = createClock();
  const deps = { db: database.db, clock };
  const app = express();
  app.use('/api/v1', function fakeGuard(req, res, next) {
    res.locals.platformAuth = {
      appId: 'app',
      clientId: 'client',
      storeId: String(req.headers['x-test-store']),
      scopes: String(req.headers['x-test-scopes'] ?? '')
        .split(',')
        .filter(Boolean),
    };
    next();
  });
  app.use('/api/v1', createResourceRouter(deps));
  const { storeId } = createStore(deps, {
    name: 'Test store',
    ...(options.seed === undefined ? {} : { seed: options.seed }),
    ...(options.currency ? { currency: options.currency } : {}),
  });
  const request = supertest(app);
  function as(opts: { storeId?: string; scopes?: string[] } = {}): ApiClient {
    const headers = {
      'x-test-store': opts.storeId ?? storeId,
      'x-test-scopes': (opts.scopes ?? ALL_SCOPES).join(','),
    };
    const url = (p: string) => `/api/v1${p}`;
    return {
      get: (p) => request.get(url(p)).set(headers),
      post: (p, body) => {
        const r = request.post(url(p)).set(headers);
        return body === undefined ? r : r.send(body as object);
      },
      put: (p, body) => {
        const r = request.put(url(p)).set(headers);
        return body === undefined ? r : r.send(body as object);
      },
      delete: (p) => request.delete(url(p)).set(headers),
    };
  }
  return { app, database, deps, clock, storeId, as, close: () => database.close() };
}

/** A real installation on a running platform, with a token carrying `scopes`. */
export async function realClient(platform: Platform, scopes: string[], storeId?: string) {
  const installed = await install(platform, { scopes, ...(storeId ? { storeId } : {}) });
  async function call(method: string, path: string, body?: unknown) {
    const res = await fetch(`${platform.apiUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${installed.accessToken}`,
        'x-store-id': installed.storeId,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return {
      status: res.status,
      headers: res.headers,
      body: (text ? JSON.parse(text) : undefined) as Record<string, unknown> & {
        data?: Array<Record<string, unknown>>;
        pagination?: Record<string, unknown>;
      },
    };
  }
  return { installed, call };
}

export const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';
