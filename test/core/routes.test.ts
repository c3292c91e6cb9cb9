/**
 * The kit's route table and its one matching rule (src/core/routes.ts), which both
 * shells apply: path case-insensitive, one trailing slash optional, HEAD served by
 * GET, 405 with Allow for another method; every answer nosniff; every 401 with its
 * challenge (RFC 6750: bare `Bearer` without credentials, `invalid_token` with).
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { CoreRequest, CoreResponse, CoreSession } from '../../src/core/http.js';
import { routeKey } from '../../src/core/route-path.js';
import { createKitRoutes, type KitRoute } from '../../src/core/routes.js';

const ok =
  (status = 200): KitRoute['handler'] =>
  async () => ({ status, headers: {}, cookies: [], body: { kind: 'json', value: { status } } });

const table: KitRoute[] = [
  { id: 'install.begin', methods: ['GET'], path: '/auth', audience: 'browser', handler: ok() },
  { id: 'webhooks', methods: ['POST'], path: '/webhooks', audience: 'machine', handler: ok() },
  { id: 'health', methods: ['GET'], path: '/healthz', audience: 'machine', handler: ok(401) },
];
const routes = createKitRoutes(table);

function request(method: string, headers: Record<string, string> = {}, presented = false) {
  return {
    method,
    path: '/',
    header: (name: string) => headers[name.toLowerCase()],
    session: { presented } as CoreSession,
    log: pino({ level: 'silent' }),
  } as unknown as CoreRequest;
}

async function run(method: string, path: string, req = request(method)) {
  const m = routes.match(method, path);
  return m && { id: m.route.id, answer: (await routes.run(m)(req)) as CoreResponse };
}

describe('kit route matching', () => {
  it.each([['/webhooks'], ['/Webhooks'], ['/webhooks/'], ['/WEBHOOKS/']])(
    'POST %s reaches the webhook receiver',
    async (path) => {
      expect((await run('POST', path))?.id).toBe('webhooks');
    },
  );

  it('GET /HEALTHZ and /healthz/ reach health; HEAD is served by the GET route', async () => {
    expect((await run('GET', '/HEALTHZ'))?.id).toBe('health');
    expect((await run('GET', '/healthz/'))?.id).toBe('health');
    expect((await run('HEAD', '/auth'))?.answer.status).toBe(200);
  });

  it('other paths are the app’s: two trailing slashes, a prefix, a longer path', async () => {
    for (const path of ['/webhooks//', '/api/webhooks', '/webhooks/x', '/', '/auth2']) {
      expect(await run('POST', path), path).toBeUndefined();
    }
  });

  it('decides every path as the rule does (lower case, one trailing slash) though most are told apart by their first segment alone', () => {
    // The rule spelled out: the path's key among the table's keys.
    const tables: KitRoute[][] = [
      table,
      [...table, { ...table[0]!, id: 'session-token', path: '/auth/session-token' }],
      // A kit path at the root, and two outside ASCII (no first-segment shortcut then).
      [
        { ...table[0]!, path: '/' },
        { ...table[1]!, path: '/café/hooks' },
        // Lower-casing İ (U+0130) gives two characters: i and a combining dot.
        { ...table[2]!, path: '/i\u0307' },
      ],
    ];
    const segments = [
      'auth',
      'AUTH',
      'Auth',
      'webhooks',
      'WebHooks',
      'healthz',
      'api',
      'aut',
      'auths',
      '',
      'café',
      'CAFÉ',
      'caf',
      'webhoo\u212As',
      '\u0130',
      'x.y',
      '%61uth',
      'session-token',
    ];
    for (const t of tables) {
      const matcher = createKitRoutes(t);
      const keys = new Set(t.map((r) => routeKey(r.path)));
      for (const a of segments) {
        for (const b of [
          '',
          '/',
          '//',
          ...segments.map((x) => `/${x}`),
          ...segments.map((x) => `/${x}/`),
        ]) {
          const path = `/${a}${b}`;
          const expected = keys.has(routeKey(path));
          expect(matcher.match('GET', path) !== undefined, `${path} in ${[...keys]}`).toBe(
            expected,
          );
        }
      }
    }
  });

  it('a lower-case method from a Fetch runtime is served as its upper case', () => {
    expect(routes.match('post', '/webhooks')?.allowed).toBe(true);
    expect(routes.match('head', '/auth')?.allowed).toBe(true);
    expect(routes.match('get', '/webhooks')?.allowed).toBe(false);
  });

  it('a kit path hit with another method answers 405 with Allow and a JSON code', async () => {
    const wrong = await run('GET', '/Webhooks/');
    expect(wrong?.answer.status).toBe(405);
    expect(wrong?.answer.headers['allow']).toBe('POST');
    expect(wrong?.answer.body).toMatchObject({ value: { code: 'METHOD_NOT_ALLOWED' } });
    const post = await run('POST', '/auth');
    expect(post?.answer.headers['allow']).toBe('GET, HEAD');
  });

  it('every answer is nosniff', async () => {
    expect((await run('POST', '/webhooks'))?.answer.headers['x-content-type-options']).toBe(
      'nosniff',
    );
  });

  it('a 401 carries the bare Bearer challenge without credentials, invalid_token with them', async () => {
    expect((await run('GET', '/healthz'))?.answer.headers['www-authenticate']).toBe('Bearer');
    const bearer = request('GET', { authorization: 'Bearer forged' });
    expect((await run('GET', '/healthz', bearer))?.answer.headers['www-authenticate']).toBe(
      'Bearer error="invalid_token"',
    );
    const cookie = request('GET', {}, true);
    expect((await run('GET', '/healthz', cookie))?.answer.headers['www-authenticate']).toBe(
      'Bearer error="invalid_token"',
    );
  });

  it('refuses a table that spells one path twice (the one rule would hide a route)', () => {
    expect(() =>
      createKitRoutes([...table, { ...table[0]!, id: 'session-token', path: '/AUTH/' }]),
    ).toThrow(/share the path/);
  });
});
