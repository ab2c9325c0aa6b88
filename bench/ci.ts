/**
 * `npm run bench:ci`: a one-minute regression check for CI. Runs the submit benchmark and
 * compares its throughput as a fraction of this machine's signature bound (a ratio, so it
 * holds on a slower machine) with bench/baseline.json; fails when it drops by more than
 * 20%. Prints one JSON line.
 */
import { readFileSync } from 'node:fs';

// A run of about a minute on two cores, whatever the caller's environment says.
process.env.BATCHES ??= '20000';
process.env.CONNECTIONS ??= '64';
process.env.TXNS ??= '1';
process.env.BENCH_QUIET ??= '1';
const { runSubmit } = await import('./submit.js');

const baseline = JSON.parse(readFileSync(new URL('./baseline.json', import.meta.url), 'utf8')) as {
  signatureBoundFraction: number;
};
const ALLOWED_DROP = 0.2;

const floor = baseline.signatureBoundFraction * (1 - ALLOWED_DROP);
// Shared two-core machines are noisy: a run under the floor gets one more try, best counts.
let r = await runSubmit();
const runs = [r.signatureBoundFraction];
if (r.signatureBoundFraction < floor) {
  const again = await runSubmit();
  runs.push(again.signatureBoundFraction);
  if (again.signatureBoundFraction > r.signatureBoundFraction) r = again;
}
const ok = r.signatureBoundFraction >= floor && r.invalid === 0;
process.stdout.write(
  `${JSON.stringify({
    bench: 'ci',
    ok,
    signatureBoundFraction: r.signatureBoundFraction,
    runs,
    baseline: baseline.signatureBoundFraction,
    floor: Math.round(floor * 1000) / 1000,
    committedBatchesPerSec: r.committedBatchesPerSec,
    submitP99Ms: r.submitP99Ms,
    commitP99Ms: r.commitP99Ms,
    peakRssMiB: r.peakRssMiB,
  })}\n`,
);
if (!ok) process.exit(1);
