// A lean closed-loop HTTP/1.1 load generator, autocannon-like: `connections`
// keep-alive sockets, one request in flight on each (pipelining 1), requests
// written as prepared bytes and responses framed by their Content-Length
// without building a response object. Why not bench/lib.js `load()`: its
// http.Agent + ClientRequest + IncomingMessage cost the load process ~37 µs of
// CPU per request (this one ~18), half of what a small Express route costs its
// server, so on a 2-core machine shared with the server the generator held the
// pace down and the servers looked more alike (ratios pressed towards 1;
// issue 24 item 4, docs/benchmarks.md).
//
// BENCH_LOAD_SPIN=1: the generator's event loop never sleeps (a setImmediate loop
// keeps libuv polling with a zero timeout) while the load runs. A sleeping generator
// must be woken by each answer the server sends, and on this VM that wake-up (an
// interrupt to an idle virtual CPU) is paid inside the server's `writev`, more often
// the slower the server: with the generator spinning, the server's kernel time a
// request no longer depends on how often the generator slept (docs/benchmarks.md,
// "Issue 31: the route's time by thread, user and kernel").
import net from 'node:net';

const HEAD_END = Buffer.from('\r\n\r\n');
const CONTENT_LENGTH = /\r\ncontent-length:[ \t]*(\d+)/i;

/**
 * The bytes of one request. `headers` as an object; a body as a string or Buffer
 * (Content-Length is set from it).
 */
export function requestBytes(url, { method = 'GET', headers = {}, body } = {}) {
  const u = new URL(url);
  const payload = body === undefined ? undefined : Buffer.from(body);
  const lines = [`${method} ${u.pathname}${u.search} HTTP/1.1`, `host: ${u.host}`];
  for (const [k, v] of Object.entries(headers)) {
    if (k.toLowerCase() !== 'content-length' && k.toLowerCase() !== 'host')
      lines.push(`${k}: ${v}`);
  }
  if (payload) lines.push(`content-length: ${payload.length}`);
  const head = Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
  return payload ? Buffer.concat([head, payload]) : head;
}

/**
 * Loads `url` for `seconds` over `connections` sockets. `next()` returns the
 * bytes of the next request (from `requestBytes`; e.g. the next store's token,
 * or a freshly signed delivery). Resolves to { requests, rps, errors, statuses,
 * bytes (response bytes per request), p50, p99 (ms) }.
 */
export function socketLoad(url, { seconds = 2, connections = 16, next }) {
  const u = new URL(url);
  const port = Number(u.port);
  const statuses = {};
  const latencies = [];
  let errors = 0;
  let responseBytes = 0;
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  let spinning = process.env.BENCH_LOAD_SPIN === '1';
  // One pending immediate at a time: libuv then polls the sockets without blocking.
  const spin = () => {
    if (spinning) setImmediate(spin);
  };
  spin();

  function connection() {
    return new Promise((resolve) => {
      const socket = net.connect({ host: u.hostname, port, noDelay: true });
      let pending = Buffer.alloc(0);
      let sentAt = 0;
      const send = () => {
        sentAt = performance.now();
        socket.write(next());
      };
      let done = false;
      const finish = () => {
        done = true;
        socket.destroy();
        resolve();
      };
      socket.once('connect', send);
      socket.on('error', () => {
        if (!done) errors++;
        finish();
      });
      // A server that drops a connection before the round ends is a failure, not a pause.
      socket.on('close', () => {
        if (!done) errors++;
        finish();
      });
      socket.on('data', (chunk) => {
        pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
        for (;;) {
          const headEnd = pending.indexOf(HEAD_END);
          if (headEnd < 0) return;
          const head = pending.latin1Slice(0, headEnd);
          const length = CONTENT_LENGTH.exec(head);
          if (!length) {
            // Every server of the bench frames its answers by length (res.json, res.end).
            errors++;
            finish();
            return;
          }
          const total = headEnd + 4 + Number(length[1]);
          if (pending.length < total) return;
          const status = head.slice(9, 12);
          statuses[status] = (statuses[status] ?? 0) + 1;
          responseBytes += total;
          const now = performance.now();
          latencies.push(now - sentAt);
          pending = pending.subarray(total);
          if (now >= end) {
            finish();
            return;
          }
          send();
        }
      });
    });
  }

  return Promise.all(Array.from({ length: connections }, connection)).then(() => {
    spinning = false;
    const elapsed = (performance.now() - t0) / 1000;
    latencies.sort((a, b) => a - b);
    const pct = (p) =>
      latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? 0;
    return {
      requests: latencies.length,
      rps: latencies.length / elapsed,
      errors,
      statuses,
      bytes: latencies.length ? responseBytes / latencies.length : 0,
      p50: pct(0.5),
      p99: pct(0.99),
    };
  });
}
