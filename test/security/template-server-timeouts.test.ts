/**
 * Issue 23 §3, the template's part: its HTTP server closes a client that
 * dribbles its request headers (slowloris) within seconds, instead of Node's
 * default minute. Real server with the template's options, raw socket.
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { expect, it } from 'vitest';
import { SERVER_OPTIONS } from '../../templates/_shared/src/server-options.js';

it('the template server closes a connection whose headers never finish within headersTimeout', {
  timeout: 30_000,
}, async () => {
  let handled = 0;
  const server = createServer(SERVER_OPTIONS, (_req, res) => {
    handled++;
    res.end('ok');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => {});
  await once(socket, 'connect');
  const started = Date.now();
  socket.write('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n');
  // One more header line every second, never the blank line that ends them.
  const drip = setInterval(() => socket.write(`X-Drip-${Date.now()}: 1\r\n`), 1000);
  try {
    await Promise.race([
      // Not events.once: a write after the server hung up emits EPIPE first.
      new Promise<void>((resolve) => socket.once('close', () => resolve())),
      new Promise((_, reject) =>
        setTimeout(() => reject(new Error('still open after 20 s')), 20_000).unref(),
      ),
    ]);
    const heldMs = Date.now() - started;
    expect(heldMs).toBeLessThan(
      SERVER_OPTIONS.headersTimeout + 2 * SERVER_OPTIONS.connectionsCheckingInterval + 1000,
    );
    expect(handled).toBe(0);
  } finally {
    clearInterval(drip);
    socket.destroy();
    server.closeAllConnections();
    server.close();
  }
});
