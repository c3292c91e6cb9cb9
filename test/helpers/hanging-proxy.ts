/**
 * A TCP proxy in front of a database that can stop forwarding while keeping
 * every socket open: a network partition or a stalled server, as the client
 * sees it (no error, no close, no answer). Bytes sent meanwhile are held, not
 * dropped, and delivered on `resume()`, as TCP would after a partition heals.
 */

import type { AddressInfo } from 'node:net';
import { connect, createServer, type Socket } from 'node:net';

export interface HangingProxy {
  port: number;
  /** `url` with its host and port replaced by the proxy's. */
  via(url: string): string;
  hang(): void;
  resume(): void;
  close(): Promise<void>;
}

export async function startHangingProxy(targetPort: number): Promise<HangingProxy> {
  let hung = false;
  const flushers = new Set<() => void>();
  const sockets = new Set<Socket>();

  const server = createServer((client) => {
    sockets.add(client);
    let upstream: Socket | undefined;
    const toServer: Buffer[] = [];
    const toClient: Buffer[] = [];
    const open = () => {
      if (upstream) return;
      upstream = connect(targetPort, '127.0.0.1');
      sockets.add(upstream);
      upstream.on('data', (d) => {
        if (hung) toClient.push(d);
        else client.write(d);
      });
      upstream.on('error', () => client.destroy());
      upstream.on('close', () => client.destroy());
    };
    const flush = () => {
      open();
      for (const d of toServer.splice(0)) upstream?.write(d);
      for (const d of toClient.splice(0)) client.write(d);
    };
    flushers.add(flush);
    client.on('data', (d) => {
      if (hung || !upstream) toServer.push(d);
      else upstream.write(d);
    });
    client.on('error', () => upstream?.destroy());
    client.on('close', () => {
      flushers.delete(flush);
      upstream?.destroy();
    });
    if (!hung) flush();
  });
  server.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    via(url) {
      const u = new URL(url);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    hang() {
      hung = true;
    },
    resume() {
      hung = false;
      for (const f of flushers) f();
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}
