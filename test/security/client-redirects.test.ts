/**
 * The API client never carries the bearer token or X-Store-Id to another
 * origin: a platform (or anything in front of it) answering a redirect to a
 * foreign host gets a typed error, and the foreign host sees no request. Two
 * real HTTP servers on loopback ports play the platform and the attacker.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RedirectRefusedError } from '../../src/client/errors.js';
import { createClientFactory } from '../../src/client/factory.js';
import { resolveClientOptions } from '../../src/client/options.js';
import type { TokenSource } from '../../src/client/transport.js';

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
}

let platform: Server;
let attacker: Server;
let platformUrl: string;
let attackerUrl: string;
let platformSeen: Seen[] = [];
let attackerSeen: Seen[] = [];
let redirect: { status: number; location: string } | undefined;

async function listen(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  platform = createServer((req, res) => {
    platformSeen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    if (redirect && req.url?.startsWith('/api/v1/products')) {
      const r = redirect;
      redirect = undefined;
      res.writeHead(r.status, { location: r.location }).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({ data: [], pagination: { hasMore: false, nextCursor: null, total: 0 } }),
    );
  });
  attacker = createServer((req, res) => {
    attackerSeen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":[]}');
  });
  platformUrl = await listen(platform);
  attackerUrl = await listen(attacker);
});
afterAll(async () => {
  for (const s of [platform, attacker]) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});
beforeEach(() => {
  platformSeen = [];
  attackerSeen = [];
  redirect = undefined;
});

const tokens: TokenSource = {
  getAccessToken: async () => 'secret-access-token',
  refreshRejected: async () => 'secret-access-token',
  revoked: async () => true,
};

function client() {
  return createClientFactory({
    options: resolveClientOptions({ baseUrl: `${platformUrl}/api/v1`, retries: { max: 0 } }),
    tokens,
  }).forStore('store-victim');
}

describe('API client redirects', () => {
  it.each([301, 302, 303, 307, 308])(
    'a %i to another origin is refused: no token or store id leaves for it',
    async (status) => {
      redirect = { status, location: `${attackerUrl}/collect?x=1` };
      const err = await client()
        .products.list()
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RedirectRefusedError);
      expect(err).toMatchObject({ code: 'REDIRECT_REFUSED', location: attackerUrl });
      expect(String((err as Error).message)).not.toContain('secret-access-token');
      expect(attackerSeen).toHaveLength(0);
    },
  );

  it('a protocol-relative Location to another host is refused too', async () => {
    redirect = { status: 307, location: `//${new URL(attackerUrl).host}/collect` };
    const err = await client()
      .products.list()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RedirectRefusedError);
    expect(attackerSeen).toHaveLength(0);
  });

  it('a POST redirected (307) to another origin is not replayed there', async () => {
    redirect = { status: 307, location: `${attackerUrl}/api/v1/products` };
    const err = await client()
      .products.create({ name: 'x' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RedirectRefusedError);
    expect(attackerSeen).toHaveLength(0);
    expect(platformSeen).toHaveLength(1);
  });

  it('a same-origin redirect is followed with the token and store id', async () => {
    redirect = { status: 308, location: '/api/v1/products-moved' };
    const page = await client().products.list();
    expect(page.data).toEqual([]);
    expect(platformSeen).toHaveLength(2);
    expect(platformSeen[1]?.url).toBe('/api/v1/products-moved');
    expect(platformSeen[1]?.headers.authorization).toBe('Bearer secret-access-token');
    expect(platformSeen[1]?.headers['x-store-id']).toBe('store-victim');
  });
});
