// The kit on Bun.serve or Deno.serve, from the built package (dist/index.js),
// for test/shells/bun-deno-journey.test.ts. Run by the runtime itself:
//   bun test/shells/runtimes/journey-server.mjs
//   deno run -A test/shells/runtimes/journey-server.mjs
// The handshake is over stdio, one JSON line each way: it listens on a free
// port and prints {"port"}; the test registers the app with its local platform
// (whose redirect URI needs that port) and writes back the kit's options; it
// starts the kit and prints {"ready":true}. Closing stdin stops it.
// Two test-only routes let the test read the runtime's kit: /_journey/state
// and /_journey/token (a kit.sessionToken for a store). The kit logs (pino,
// level info) to stderr, which the test reads.
import { storeApp } from '../../../dist/index.js';

const runtime = typeof Deno !== 'undefined' ? 'deno' : typeof Bun !== 'undefined' ? 'bun' : null;
if (!runtime) throw new Error('journey-server.mjs runs on Bun or Deno');

const out = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);

let kit;
async function answer(request, remoteAddress) {
  if (!kit) return new Response('starting', { status: 503 });
  const url = new URL(request.url);
  if (url.pathname === '/_journey/state') {
    const storeId = url.searchParams.get('store');
    return Response.json({
      runtime,
      installed: (await kit.installations.get(storeId)) !== null,
      pendingPurges: (await kit.pendingPurges()).length,
    });
  }
  if (url.pathname === '/_journey/token') {
    const { token } = await kit.sessionToken(url.searchParams.get('store'));
    return Response.json({ token });
  }
  const answered = await kit.fetch(request, { remoteAddress });
  if (answered) return answered;
  if (url.pathname === '/api/products') {
    const store = await kit.authenticate(request);
    if (store instanceof Response) return store;
    const page = await store.client.products.list({ limit: 1 });
    return Response.json({ storeId: store.storeId, count: page.data.length, runtime });
  }
  return new Response('not found', { status: 404 });
}

let stop;
let port;
if (runtime === 'bun') {
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: (request, srv) => answer(request, srv.requestIP(request)?.address),
  });
  port = server.port;
  stop = () => server.stop(true);
} else {
  const server = Deno.serve(
    { hostname: '127.0.0.1', port: 0, onListen: () => {} },
    (request, info) => answer(request, info.remoteAddr.hostname),
  );
  port = server.addr.port;
  stop = () => server.shutdown();
}
out({ port, runtime });

let buffered = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', async (chunk) => {
  buffered += chunk;
  const nl = buffered.indexOf('\n');
  if (nl < 0 || kit) return;
  const options = JSON.parse(buffered.slice(0, nl));
  try {
    // pino on the runtime: the kit's own logger, as JSON lines on stderr.
    kit = await storeApp({ ...options, logger: { level: 'info', destination: process.stderr } });
    out({ ready: true });
  } catch (err) {
    out({ error: String(err?.code ?? ''), message: String(err?.message ?? err) });
    process.exit(1);
  }
});
process.stdin.on('end', async () => {
  await stop();
  await kit?.close();
  process.exit(0);
});
