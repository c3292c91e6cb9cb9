import { Writable } from 'node:stream';
import pino from 'pino';
import { expect, it } from 'vitest';
import { startPlatform } from '../../src/platform/index.js';
import { install } from './helpers.js';

it('logs requests and uninstalls without any token, code, verifier or secret', async () => {
  let out = '';
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      out += chunk.toString();
      cb();
    },
  });
  const platform = await startPlatform({
    logger: pino({ level: 'info' }, sink),
    webhookRetrySchedule: [],
  });
  try {
    const inst = await install(platform);
    await fetch(`${platform.apiUrl}/stores/current`, {
      headers: { authorization: `Bearer ${inst.accessToken}`, 'x-store-id': inst.storeId },
    });
    platform.uninstall({ storeId: inst.storeId, clientId: inst.clientId });
    await platform.waitForDeliveries({ clientId: inst.clientId });
    expect(out).toContain('"path":"/oauth/token"');
    expect(out).toContain('app uninstalled');
    for (const secret of [
      inst.accessToken,
      inst.refreshToken,
      inst.code,
      inst.verifier,
      inst.clientSecret,
      inst.webhookSecret,
    ]) {
      expect(out).not.toContain(secret);
    }
  } finally {
    await platform.close();
  }
});
