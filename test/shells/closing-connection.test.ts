/**
 * How a draining instance tells a client to go elsewhere (src/shutdown/closing-connection.ts),
 * over real sockets on Node's own servers: on HTTP/1 `Connection: close` on each
 * connection's newest answer only; on HTTP/2 a graceful close of the session (GOAWAY), never
 * a connection header (which HTTP/2 forbids).
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { closeConnectionAfter } from '../../src/shutdown/closing-connection.js';

describe('closeConnectionAfter', () => {
  it('HTTP/1: three pipelined answers all go out, only the newest says Connection: close', async () => {
    // Each answer is marked as the handler runs (as a draining kit marks each request it
    // sees); the first two wait, so the later requests arrive before their heads are written.
    const server = createServer(async (req, res) => {
      closeConnectionAfter(res);
      await sleep(req.url === '/3' ? 0 : 150);
      res.end(`answer ${req.url}`);
    }).listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    try {
      const socket = net.connect(port, '127.0.0.1');
      let received = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => {
        received += chunk;
      });
      socket.write(['/1', '/2', '/3'].map((p) => `GET ${p} HTTP/1.1\r\nHost: x\r\n\r\n`).join(''));
      // The server closes the connection after the answer marked last.
      await once(socket, 'close');
      const answers = received.split(/(?=HTTP\/1\.1 )/);
      expect(answers.map((a) => a.match(/answer \/\d/)?.[0])).toEqual([
        'answer /1',
        'answer /2',
        'answer /3',
      ]);
      expect(answers.map((a) => /^connection: close$/im.test(a))).toEqual([false, false, true]);
    } finally {
      server.close();
    }
  });

  it('HTTP/1: an answer whose head is already written keeps it; the next one is marked', async () => {
    const server = createServer((req, res) => {
      if (req.url === '/first') {
        // The head goes out before the handler marks the answer: too late to mark it.
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.flushHeaders();
      }
      closeConnectionAfter(res);
      res.end('done');
    }).listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    try {
      // One connection, one request after the other.
      const socket = net.connect(port, '127.0.0.1');
      socket.setEncoding('utf8');
      let text = '';
      socket.on('data', (c: string) => {
        text += c;
      });
      const answer = async (path: string) => {
        text = '';
        socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
        while (!text.includes('done')) await once(socket, 'data');
        return /^connection: (.*)$/im.exec(text)?.[1]?.trim();
      };
      expect(await answer('/first')).toBe('keep-alive');
      expect(await answer('/second')).toBe('close');
      await once(socket, 'close');
    } finally {
      server.close();
    }
  });

  it('HTTP/2: the session is closed gracefully (GOAWAY); the answer goes out, no warning', async () => {
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    const server = http2.createServer((_req, res) => {
      closeConnectionAfter(res);
      res.end('answered');
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    const client = http2.connect(`http://127.0.0.1:${port}`);
    try {
      const goaway = once(client, 'goaway');
      const stream = client.request({ ':path': '/' });
      let body = '';
      stream.setEncoding('utf8');
      stream.on('data', (c: string) => {
        body += c;
      });
      const [headers] = (await once(stream, 'response')) as [http2.IncomingHttpHeaders];
      await once(stream, 'end');
      expect(headers[':status']).toBe(200);
      expect(headers['connection']).toBeUndefined();
      expect(body).toBe('answered');
      await Promise.race([
        goaway,
        sleep(2_000).then(() => {
          throw new Error('no GOAWAY within 2 s: the client would keep sending to this instance');
        }),
      ]);
      // Give Node's one-time warning a turn to be emitted, had a connection header been set.
      await sleep(20);
      expect(warnings.map((w) => w.message)).toEqual([]);
    } finally {
      process.off('warning', onWarning);
      client.close();
      server.close();
    }
  });
});
