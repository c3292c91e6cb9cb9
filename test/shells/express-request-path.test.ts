/**
 * `kit.middleware()` matches every request of the app against the kit's routes by the
 * path Express itself routes by (`req.path`), read without Express's getter for the
 * common request target. One table of raw request targets, sent over a real socket to
 * an app that answers both readings: they must agree on every target Node accepts,
 * mounted or not, and the kit's own routes must be found under the same spellings.
 */
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestPath } from '../../src/shells/express/index.js';

/** Raw request targets (some that `parseurl` reads by its fast path, some by `url.parse`). */
const TARGETS = [
  '/a',
  '/a?b',
  '/A/',
  '/a?b?c',
  '/a?x#y',
  '/a#b',
  '/a%20b',
  '//double',
  '/a?q=\\x',
  'http://host.example/abs?x',
  '/webhooks/?x=1',
  '/a\\b?c#d',
  '/mount/x?y',
  '/mount?y',
  '/mount/',
  '/?',
];

function send(port: number, target: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () =>
      socket.end(`GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`),
    );
    let data = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk) => {
      data += chunk;
    });
    socket.on('error', reject);
    socket.on('end', () => resolve(data));
  });
}

describe("the Express shell's request path", () => {
  let server: ReturnType<ReturnType<typeof express>['listen']>;
  let port: number;
  beforeAll(async () => {
    const app = express();
    const both: express.RequestHandler = (req, res) => {
      res.json({ kit: requestPath(req), express: req.path });
    };
    app.use('/mount', both);
    app.use(both);
    server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it.each(TARGETS)('reads %j as Express does', async (target) => {
    const raw = await send(port, target);
    expect(raw.split('\r\n')[0]).toBe('HTTP/1.1 200 OK');
    const body = JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)) as {
      kit: string;
      express: string;
    };
    expect(body.kit).toBe(body.express);
  });
});
