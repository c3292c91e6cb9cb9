/**
 * Issue 23 §1: the unauthenticated install callback is bounded. A client that
 * begins installs and calls the callback with made-up codes gets 429 with
 * Retry-After past `auth.maxCallbacksPerSourcePerMinute` (before any claim row
 * or token request), exchanges in flight are capped, and a real merchant's
 * install from another address goes through during the flood. Real sockets
 * against the local platform; the attacker's connections come from 127.0.0.x.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { SqliteDatabase } from '../../src/kit.js';
import { type Platform, startPlatform } from '../../src/platform/index.js';
import { Browser, begin, type Harness, startHarness } from '../install/harness.js';

const dir = mkdtempSync(join(tmpdir(), 'sak-callback-flood-'));

interface Answer {
  status: number;
  location: string | undefined;
  retryAfter: string | undefined;
  setCookie: string[];
}

/** A GET over node:http from `localAddress`, with exactly these headers. */
function getFrom(url: string, localAddress: string, headers: Record<string, string> = {}) {
  return new Promise<Answer>((resolve, reject) => {
    const u = new URL(url);
    const req = httpRequest(
      { host: u.hostname, port: u.port, path: u.pathname + u.search, localAddress, headers },
      (res) => {
        res.resume();
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            location: res.headers.location,
            retryAfter: res.headers['retry-after'],
            setCookie: res.headers['set-cookie'] ?? [],
          }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** One attacker round: begin an install, call the callback with its state and a made-up code. */
async function bogusRound(h: Harness, from: string, n: number): Promise<Answer> {
  const begun = await getFrom(`${h.appUrl}/auth?store_id=${h.storeId}`, from);
  expect(begun.status).toBe(302);
  const state = new URL(begun.location!).searchParams.get('state')!;
  const cookie = begun.setCookie.map((c) => c.split(';', 1)[0]).join('; ');
  const callback = new URL(`${h.appUrl}/auth/callback`);
  callback.searchParams.set('state', state);
  callback.searchParams.set('code', `bogus${n}`);
  callback.searchParams.set('store_id', h.storeId);
  return getFrom(callback.toString(), from, { cookie });
}

async function claimRows(h: Harness): Promise<number> {
  const rows = (h.kit.db as SqliteDatabase).all<{ n: number }>(
    sql`SELECT count(*) AS n FROM store_app_claims`,
  );
  return rows[0]!.n;
}

/** The merchant's install from 127.0.0.1, through the platform's approval. */
async function merchantInstall(h: Harness, platform: Platform): Promise<number> {
  const browser = new Browser();
  const callback = platform.approveInstall({
    authorizeUrl: await begin(h, browser),
    storeId: h.storeId,
  });
  return (await browser.get(callback)).status;
}

describe('install callback flood (issue 23 §1)', () => {
  let platform: Platform;
  let h: Harness | undefined;
  beforeAll(async () => {
    platform = await startPlatform({ logger: false });
  });
  afterEach(async () => {
    platform.setFaults(undefined);
    await h?.close();
    h = undefined;
  });
  afterAll(async () => {
    await platform?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('one address: past the per-source bound 429 with Retry-After, no claim row and no token request; the merchant installs meanwhile', async () => {
    h = await startHarness({ databaseUrl: join(dir, 'source.db'), platform });
    const before = platform.stats().tokenRequests.authorization_code;
    const attacker = '127.0.0.2';
    // 60 rounds, 10 at a time, with the merchant's install in the middle of them.
    const answers: Answer[] = [];
    let merchant: Promise<number> | undefined;
    for (let wave = 0; wave < 6; wave++) {
      if (wave === 3) merchant = merchantInstall(h, platform);
      answers.push(
        ...(await Promise.all(
          Array.from({ length: 10 }, (_, i) => bogusRound(h!, attacker, wave * 10 + i)),
        )),
      );
    }
    expect(await merchant).toBe(302);
    expect(await h.kit.installations.get(h.storeId)).not.toBeNull();

    const limited = answers.filter((a) => a.status === 429);
    // The default bound: 20 callbacks a minute reach the claims and the platform.
    expect(answers.length - limited.length).toBe(20);
    for (const a of limited) {
      expect(Number(a.retryAfter)).toBeGreaterThanOrEqual(1);
      expect(Number(a.retryAfter)).toBeLessThanOrEqual(60);
    }
    // Each admitted bogus callback: one token request, a state and a code claim.
    const exchanges = platform.stats().tokenRequests.authorization_code - before;
    expect(exchanges).toBe(20 + 1);
    // The merchant's install wrote two claims too.
    expect(await claimRows(h)).toBeLessThanOrEqual(2 * 20 + 2);
  });

  it('many addresses: token exchanges in flight are capped, the rest get 429 Retry-After: 1, and a retry goes through', async () => {
    h = await startHarness({
      databaseUrl: join(dir, 'inflight.db'),
      platform,
      kit: { auth: { maxExchangesInFlight: 2 } },
    });
    // A slow token endpoint keeps the admitted exchanges in flight.
    platform.setFaults({ token: { latencyMs: 800 } });
    const sources = Array.from({ length: 8 }, (_, i) => `127.0.0.${10 + i}`);
    const answers = await Promise.all(sources.map((s, i) => bogusRound(h!, s, i)));
    const limited = answers.filter((a) => a.status === 429);
    expect(answers.length - limited.length).toBeLessThanOrEqual(2);
    expect(limited.length).toBeGreaterThanOrEqual(6);
    for (const a of limited) expect(a.retryAfter).toBe('1');
    // Once those are done, the merchant gets through.
    platform.setFaults(undefined);
    expect(await merchantInstall(h, platform)).toBe(302);
  });

  it('refuses bounds that are not positive integers at start, naming the option', async () => {
    await expect(
      startHarness({
        databaseUrl: join(dir, 'bad.db'),
        platform,
        kit: { auth: { maxCallbacksPerSourcePerMinute: 0 } },
      }),
    ).rejects.toMatchObject({ setting: 'auth.maxCallbacksPerSourcePerMinute' });
  });
});
