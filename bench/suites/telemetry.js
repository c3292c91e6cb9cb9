// Telemetry with no OpenTelemetry provider registered (issue 16): what the
// kit's span helpers add to a call when the app uses no OpenTelemetry. The
// kit's routes (webhook receiver, install) go through `traceHandler`, every API
// call, token call, refresh and purge through `inSpan`. Each is timed against
// the same function called bare, in interleaved rounds of the same run;
// figures are nanoseconds per call (medians) and the added nanoseconds.
import { inSpan, SPAN, traceHandler } from '../../dist/telemetry/index.js';
import { median, report } from '../lib.js';

const CALLS = 200_000;
const ROUNDS = 7;

let sink = 0;
const answer = { status: 200 };
const handler = async () => {
  sink++;
  return answer;
};
const traced = () => traceHandler(SPAN.webhook, 'POST', handler);

async function perCallNs(fn) {
  const started = process.hrtime.bigint();
  for (let i = 0; i < CALLS; i++) await fn();
  return Number(process.hrtime.bigint() - started) / CALLS;
}

const work = async () => {
  sink++;
  return sink;
};
async function perAsyncCallNs(fn) {
  const started = process.hrtime.bigint();
  for (let i = 0; i < CALLS; i++) await fn();
  return Number(process.hrtime.bigint() - started) / CALLS;
}
const wrapped = () => inSpan(SPAN.purge, { operation: 'purge' }, work);

const bare = [];
const withSpan = [];
const bareAsync = [];
const withInSpan = [];
// Warm both paths before measuring.
await perCallNs(handler);
await perCallNs(traced);
await perAsyncCallNs(work);
await perAsyncCallNs(wrapped);
for (let r = 0; r < ROUNDS; r++) {
  // Alternate the order so neither side always runs on a warmer machine.
  if (r % 2 === 0) {
    bare.push(await perCallNs(handler));
    withSpan.push(await perCallNs(traced));
    bareAsync.push(await perAsyncCallNs(work));
    withInSpan.push(await perAsyncCallNs(wrapped));
  } else {
    withSpan.push(await perCallNs(traced));
    bare.push(await perCallNs(handler));
    withInSpan.push(await perAsyncCallNs(wrapped));
    bareAsync.push(await perAsyncCallNs(work));
  }
}
report('traceHandler, no provider (ns per request)', {
  bare_median: median(bare),
  traced_median: median(withSpan),
  added_ns: median(withSpan) - median(bare),
});
report('inSpan, no provider (ns per call)', {
  bare_median: median(bareAsync),
  traced_median: median(withInSpan),
  added_ns: median(withInSpan) - median(bareAsync),
});
if (sink === 0) console.log('');
