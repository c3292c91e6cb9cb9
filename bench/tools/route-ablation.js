// Where the authenticated route's time goes (issue 24 item 4): the route of
// bench/peers (1000 stores' tokens round robin) on variants of the kit and of
// bare Express, one process each (bench/peers/server.js BENCH_VARIANT), in
// interleaved rounds; prints median req/s and server CPU µs per request, and
// paired ratios against bare Express.
//   npm run build && node bench/tools/route-ablation.js [rounds] [connections,...] [variant,...]
// (variants by name as printed; bare and kit always run)
// BENCH_ABLATION=hono: the Fetch shell's route on Hono and its variants against bare Hono
// (docs/benchmarks.md, "The Fetch shell's route after issue 31's speed work").
// BENCH_ROUND_SECONDS (default 1.5): the load of one variant in one round.
// BENCH_LOAD_SPIN=1: the load generator never sleeps (bench/tools/socket-load.js).
// BENCH_WARM_SECONDS (default 0.3): unmeasured load before each round. BENCH_PIN=1: the
// servers on CPU 1, the generator on CPU 0 (taskset). One process a variant: two processes
// of one server differ by up to a tenth (docs/benchmarks.md, "the process lottery"), so
// compare variants over several runs, or list one twice.
// On Linux it also prints the server's main thread's user and kernel time a request
// (/proc/<pid>/task/<pid>/stat): the route's JavaScript apart from the kernel's send and
// from the GC's helper threads, and steadier between runs than req/s.
// BENCH_BASELINE=<dir> adds "kit, baseline build": <dir>/bench/peers/server.js,
// i.e. a copy of an earlier build's dist/ and bench/ (with node_modules linked),
// so before and after are measured in the same rounds.
import { execFileSync, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { childCpu as cpu, median } from '../lib.js';
import { requestBytes, socketLoad } from './socket-load.js';

const [roundsArg = '8', connectionsArg = '16,50', only] = process.argv.slice(2);
const here = dirname(fileURLToPath(import.meta.url));
const secret = `whsec_${randomBytes(32).toString('base64')}`;
const hono = process.env.BENCH_ABLATION === 'hono';
// BENCH_ABLATION=hono: the Fetch shell on Hono (bench/peers/server.js `hono` side) against bare Hono.
const honoVariants = {
  bare: ['honoBare', ''],
  'bare + one pass-through middleware': ['honoBare', 'hono-bare-middleware'],
  'bare + that middleware setting HSTS nosniff and Vary': ['honoBare', 'hono-bare-headers'],
  'bare + HSTS nosniff and Vary on the Node response': ['honoBare', 'hono-bare-node-headers'],
  "bare + HSTS nosniff and Vary in the handler's own headers": [
    'honoBare',
    'hono-bare-header-bytes',
  ],
  "bare + two pass-through middlewares (the mount's shape)": [
    'honoBare',
    'hono-bare-two-middlewares',
  ],
  'bare + the least a remembered-token route does (the floor)': ['honoBare', 'hono-bare-floor'],
  'bare + hono/secure-headers and hono/bearer-auth (what one writes by hand)': [
    'honoBare',
    'hono-bare-idiomatic',
  ],
  "bare served from the kit's process": ['hono', 'hono-bare-in-kit-process'],
  'bare + the local platform and its 1000 stores in the process': [
    'honoBare',
    'hono-bare-with-platform',
  ],
  'bare + AsyncLocalStorage in use': ['honoBare', 'async-local-storage'],
  'bare + ~9 MB more live heap': ['honoBare', 'larger-heap'],
  'bare + 1 µs of CPU in a middleware': ['honoBare', 'hono-bare-spin-1'],
  'bare + 3 µs of CPU in a middleware': ['honoBare', 'hono-bare-spin-3'],
  'bare + 0 µs of CPU in a middleware': ['honoBare', 'hono-bare-spin-0'],
  'kit for one store only': ['hono', 'one-store'],
  'hono.middleware() only (no hono.authenticated())': ['hono', 'hono-middleware-only'],
  'hono.middleware() + a pass-through route middleware': ['hono', 'hono-route-passthrough'],
  'kit.fetch only (no kit.authenticate)': ['hono', 'hono-fetch-only'],
  'kit.authenticate only (no kit.fetch)': ['hono', 'hono-authenticate-only'],
  'kit without kit.secureResponse': ['hono', 'hono-no-secure'],
  'kit, mounted as before (two middlewares, c.res reassigned)': ['hono', 'hono-main-mount'],
  'kit mounted over kit.fetch and kit.secureResponse': ['hono', 'hono-fetch-mount'],
  'kit with the local platform in its process (the bench before 2026-11-29)': [
    'hono',
    'platform-in-process',
  ],
  'kit around the app (hono.fetch(app) and hono.authenticated(handler))': ['hono', 'hono-wrapped'],
  kit: ['hono', ''],
};
const variants = hono
  ? honoVariants
  : {
      bare: ['bare', ''],
      'bare + security headers': ['bare', 'security-headers'],
      'bare + a pass-through route middleware': ['bare', 'route-passthrough'],
      'bare + the least a remembered-token route does (the floor)': ['bare', 'express-floor'],
      'bare + nested Router': ['bare', 'nested-router'],
      'bare + AsyncLocalStorage in use': ['bare', 'async-local-storage'],
      'bare + ~9 MB more live heap': ['bare', 'larger-heap'],
      "bare + a Router shaped like the kit's": ['bare', 'kit-shaped-router'],
      "bare + the kit's request logger": ['bare', 'request-logger'],
      "bare + the kit's launch watch": ['bare', 'launch-watch'],
      'kit.authenticated() only': ['kit', 'authenticated-only'],
      'kit for one store only': ['kit', 'one-store'],
      "bare served from the kit's process": ['kit', 'bare-in-kit-process'],
      'kit.middleware() only': ['kit', 'middleware-only'],
      'kit without security headers': ['kit', 'no-security-headers'],
      'kit with the local platform in its process (the bench before 2026-11-29)': [
        'kit',
        'platform-in-process',
      ],
      'kit with its server watched (shutdownOnSignals as the templates start it)': [
        'kit',
        'watched-server',
      ],
      kit: ['kit', ''],
    };
if (process.env.BENCH_BASELINE)
  variants['kit, baseline build'] = [hono ? 'hono' : 'kit', '', process.env.BENCH_BASELINE];
// The baseline's kit code under this checkout's mount (bench/peers/server.js with its dist/).
if (process.env.BENCH_BASELINE && hono)
  variants['kit, baseline build, this mount'] = ['hono', '', undefined, process.env.BENCH_BASELINE];
const ROUND_SECONDS = Number(process.env.BENCH_ROUND_SECONDS ?? 1.5);
/**
 * An unmeasured pass before each round (BENCH_WARM_SECONDS, default 0.3; 0: none). The
 * processes take turns, so one sits idle for most of the run, and what it does once per
 * store per interval falls due while it idles: the kit's installation cache (30 s) then
 * reloads all 1,000 stores inside one measured round, where a server under steady load
 * spreads it over 30 s of requests (docs/benchmarks.md, "the cache's reload").
 */
const WARM_SECONDS = Number(process.env.BENCH_WARM_SECONDS ?? 0.3);
/** The main thread's [user, kernel] CPU µs so far (Linux), else undefined. */
function mainThreadCpu(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8');
    // After the command name, which may itself hold ") ".
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime (fields 14 and 15 of stat) in clock ticks of 10 ms (USER_HZ 100).
    return [Number(fields[11]) * 10_000, Number(fields[12]) * 10_000];
  } catch {
    return undefined;
  }
}
/**
 * BENCH_PIN=1 (Linux, taskset): every server on CPU 1 and the load generator on CPU 0, so
 * neither is moved between the two cores mid-round (steadier rounds on a 2-core machine).
 */
const PIN = process.env.BENCH_PIN === '1';
if (PIN) execFileSync('taskset', ['-a', '-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });
const sides = {};
// A variant that fails must not leave the others running.
process.on('exit', () => {
  for (const s of Object.values(sides)) if (s.child.exitCode === null) s.child.kill();
});
const wanted = (name) =>
  !only || name === 'bare' || name === 'kit' || only.split(',').includes(name);
for (const [name, [side, variant, root, dist]] of Object.entries(variants)) {
  if (!wanted(name) && root === undefined && dist === undefined) continue;
  const server = root
    ? join(root, 'bench', 'peers', 'server.js')
    : join(here, '..', 'peers', 'server.js');
  const child = fork(server, [], {
    env: {
      ...process.env,
      NODE_ENV: 'production',
      BENCH_WEBHOOK_SECRET: secret,
      BENCH_SIDES: side,
      BENCH_STORES: '1000',
      BENCH_VARIANT: variant,
      ...(dist ? { BENCH_KIT_DIST: join(dist, 'dist') } : {}),
    },
    // stdout ignored: the kit's warning that the headers are off is that variant's point.
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const info = await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`${name} exited with ${code}`)));
  });
  sides[name] = { child, url: `${info.urls[side]}/api/data`, tokens: info.kitTokens };
  if (PIN) execFileSync('taskset', ['-a', '-p', '-c', '1', String(child.pid)], { stdio: 'ignore' });
}
// Bare Express reads no token: it gets the first kit's.
const anyTokens = Object.values(sides).find((s) => s.tokens).tokens;
const names = Object.keys(sides);
console.log(
  `load average ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);
for (const connections of connectionsArg.split(',').map(Number)) {
  const out = Object.fromEntries(names.map((n) => [n, []]));
  // Round 0 is the warm-up (every token verified once, JIT settled), not counted.
  for (let i = 0; i <= Number(roundsArg); i++) {
    for (let j = 0; j < names.length; j++) {
      const name = names[(i + j) % names.length];
      const { child, url, tokens = anyTokens } = sides[name];
      const requests = tokens.map((t) =>
        requestBytes(url, {
          headers: { authorization: `Bearer ${t}`, accept: 'application/json' },
        }),
      );
      let k = 0;
      // Unmeasured: each store's request once or more, so what the server does once per
      // store per interval (the kit's installation cache reloads every 30 s) is not
      // charged to this round for the seconds the process sat idle (see WARM_SECONDS).
      if (WARM_SECONDS > 0) {
        await socketLoad(url, {
          seconds: WARM_SECONDS,
          connections,
          next: () => requests[k++ % requests.length],
        });
      }
      const c0 = await cpu(child);
      const t0 = mainThreadCpu(child.pid);
      const r = await socketLoad(url, {
        seconds: ROUND_SECONDS,
        connections,
        next: () => requests[k++ % requests.length],
      });
      const c1 = await cpu(child);
      const t1 = mainThreadCpu(child.pid);
      if (r.errors || Object.keys(r.statuses).some((s) => s !== '200')) {
        throw new Error(`${name}: ${JSON.stringify(r.statuses)} errors=${r.errors}`);
      }
      if (i > 0) {
        out[name].push({
          rps: r.rps,
          cpu: (c1 - c0) / r.requests,
          bytes: r.bytes,
          user: t0 && t1 ? (t1[0] - t0[0]) / r.requests : Number.NaN,
          sys: t0 && t1 ? (t1[1] - t0[1]) / r.requests : Number.NaN,
        });
      }
    }
  }
  console.log(`\n${connections} connections, ${roundsArg} rounds`);
  console.log(
    '| variant | req/s | CPU µs/req | main thread user / kernel µs/req | response B | paired req/s vs bare | paired CPU (bare/variant) | paired main-thread user (bare/variant) |',
  );
  console.log('|---|---|---|---|---|---|---|---|');
  for (const n of names) {
    const m = out[n];
    const pr = median(m.map((x, i) => x.rps / out.bare[i].rps));
    const pc = median(m.map((x, i) => out.bare[i].cpu / x.cpu));
    const pu = median(m.map((x, i) => out.bare[i].user / x.user));
    const user = median(m.map((x) => x.user));
    const sys = median(m.map((x) => x.sys));
    console.log(
      `| ${n} | ${Math.round(median(m.map((x) => x.rps)))} | ${median(m.map((x) => x.cpu)).toFixed(1)} | ${user.toFixed(1)} / ${sys.toFixed(1)} | ${Math.round(m[0].bytes)} | ${pr.toFixed(2)} | ${pc.toFixed(2)} | ${pu.toFixed(2)} |`,
    );
  }
}
console.log(
  `load average ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);
for (const s of Object.values(sides)) s.child.send('close');
