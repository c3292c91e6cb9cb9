// A flood of forged bearer tokens on the Hono route (bench/peers/server.js `hono` side,
// 1,000 stores): each request carries one of the stores' real tokens with its last two
// signature characters changed, so every one is refused (401). Prints req/s and server
// CPU µs per refusal; with BENCH_BASELINE=<dir> (an earlier build's checkout, built, with
// node_modules linked) the same for that build, in alternating rounds, and the paired ratios.
//   npm run build && BENCH_BASELINE=<dir> node bench/tools/forged-bearer.js [rounds] [connections]
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { childCpu as cpu, median } from '../lib.js';
import { requestBytes, socketLoad } from './socket-load.js';

const [roundsArg = '8', connectionsArg = '16'] = process.argv.slice(2);
const secret = `whsec_${randomBytes(32).toString('base64')}`;
const builds = { 'this build': undefined };
if (process.env.BENCH_BASELINE) builds.baseline = join(process.env.BENCH_BASELINE, 'dist');
const sides = {};
process.on('exit', () => {
  for (const s of Object.values(sides)) if (s.child.exitCode === null) s.child.kill();
});
for (const [name, dist] of Object.entries(builds)) {
  const child = fork(new URL('../peers/server.js', import.meta.url), [], {
    env: {
      ...process.env,
      NODE_ENV: 'production',
      BENCH_WEBHOOK_SECRET: secret,
      BENCH_SIDES: 'hono',
      BENCH_STORES: '1000',
      BENCH_VARIANT: '',
      ...(dist ? { BENCH_KIT_DIST: dist } : {}),
    },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const info = await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`${name} exited with ${code}`)));
  });
  const url = `${info.urls.hono}/api/data`;
  const forged = info.kitTokens.map((t) => `${t.slice(0, -2)}${t.endsWith('AA') ? 'BB' : 'AA'}`);
  const requests = forged.map((t) =>
    requestBytes(url, { headers: { authorization: `Bearer ${t}`, accept: 'application/json' } }),
  );
  sides[name] = { child, url, requests, rounds: [] };
}
const names = Object.keys(sides);
for (let i = 0; i <= Number(roundsArg); i++) {
  for (let j = 0; j < names.length; j++) {
    const side = sides[names[(i + j) % names.length]];
    let k = 0;
    const c0 = await cpu(side.child);
    const r = await socketLoad(side.url, {
      seconds: 1.5,
      connections: Number(connectionsArg),
      next: () => side.requests[k++ % side.requests.length],
    });
    const c1 = await cpu(side.child);
    if (r.errors || Object.keys(r.statuses).some((s) => s !== '401')) {
      throw new Error(`expected only 401: ${JSON.stringify(r.statuses)} errors=${r.errors}`);
    }
    // Round 0 warms up.
    if (i > 0) side.rounds.push({ rps: r.rps, cpu: (c1 - c0) / r.requests });
  }
}
console.log(`forged bearer tokens, ${connectionsArg} connections, ${roundsArg} rounds`);
for (const n of names) {
  const m = sides[n].rounds;
  console.log(
    `${n}: ${Math.round(median(m.map((x) => x.rps)))} req/s, ${median(m.map((x) => x.cpu)).toFixed(1)} µs CPU a refusal`,
  );
}
if (sides.baseline) {
  const a = sides['this build'].rounds;
  const b = sides.baseline.rounds;
  console.log(
    `paired, this build ÷ baseline: req/s ${median(a.map((x, i) => x.rps / b[i].rps)).toFixed(2)}, CPU (baseline ÷ this) ${median(a.map((x, i) => b[i].cpu / x.cpu)).toFixed(2)}`,
  );
}
for (const s of Object.values(sides)) s.child.send('close');
