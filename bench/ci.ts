/**
 * `npm run bench:ci`: the performance regression check CI runs. An interleaved A/B of this
 * checkout against the build of its parent commit (BENCH_BASE_REF to pick another), on this
 * machine in this job (bench/ab.ts): a warm-up run that is not counted, then ABBA rounds of
 * `cairn bench` on a fresh node of each build, then Welch's t-test on the per-run committed rates; it fails when this checkout is
 * slower by at least AB_MIN_EFFECT percent (10) at p < AB_ALPHA (0.05). A verdict of "slower"
 * gets one more round before it stands, as a shared machine can have a bad minute.
 *
 * Then the latency mode (AB_LATENCY=0 skips it): ABBA rounds of an open-loop run at a fixed
 * fraction of the base's committed rate (AB_LATENCY_FRACTION, 0.5: "half of peak") for
 * AB_LATENCY_SECONDS (15), 128 connections, comparing each build's submit and commit p99 with
 * the same test; it fails when this checkout's p99 is higher by at least AB_LATENCY_MIN_EFFECT
 * percent (25: a p99 is noisier than a rate) at p < AB_ALPHA, again after one more round.
 *
 * Where the base cannot be had (a clone without the parent commit, no network for `npm ci`
 * when the lockfile changed, a base that does not build), it falls back to the former check:
 * throughput as a fraction of this machine's signature bound against bench/baseline.json,
 * failing below 80% of it. Prints one JSON line either way.
 */
import { readFileSync } from 'node:fs';
import { envInt } from './lib/env.js';

// A run of a few minutes on two cores, whatever the caller's environment says.
process.env.BATCHES ??= '20000';
process.env.CONNECTIONS ??= '64';
process.env.TXNS ??= '1';
process.env.BENCH_QUIET ??= '1';

const log = (m: string): void => {
  if (process.env.BENCH_QUIET !== '1' || process.env.BENCH_CI_VERBOSE === '1') process.stderr.write(`[ci] ${m}\n`);
};

class BaseFailed extends Error {}

async function abCheck(): Promise<boolean | undefined> {
  if (process.env.BENCH_CI_MODE === 'baseline') return undefined;
  const { prepareBase, benchBuild } = await import('./ab.js');
  const { compareRuns } = await import('../src/bench/compare.js');
  const base = prepareBase(process.env.BENCH_BASE_REF ?? 'HEAD^', log);
  if ('reason' in base) {
    process.stderr.write(`bench:ci: no A/B (${base.reason}); the baseline-ratio check instead\n`);
    return undefined;
  }
  try {
    const rounds = envInt('AB_ROUNDS', 2, 1, 20);
    const minEffect = envInt('AB_MIN_EFFECT', 10, 1, 100);
    const alpha = Number(process.env.AB_ALPHA ?? 0.05);
    const args = ['--batches', String(envInt('AB_BATCHES', 10000, 100)), '--connections', process.env.CONNECTIONS ?? '64'];
    const a: number[] = [];
    const b: number[] = [];
    const head = process.cwd();
    const round = async (): Promise<void> => {
      // ABBA: a drift during the round weighs on both builds alike.
      for (const which of ['a', 'b', 'b', 'a'] as const) {
        const r = await benchBuild(which === 'a' ? base.dir : head, args).catch((err: Error) => {
          // The base failing to run is no verdict on this checkout.
          throw which === 'a' ? new BaseFailed(err.message) : err;
        });
        if (r.invalid > 0 || r.errors > 0)
          throw new Error(`a ${which === 'a' ? 'base' : 'head'} run had ${r.invalid} invalid batches and ${r.errors} errors`);
        (which === 'a' ? a : b).push(r.committedBatchesPerSec);
        log(`${which === 'a' ? 'base' : 'head'}: ${r.committedBatchesPerSec} batches/s`);
      }
    };
    // A run that is not counted first: this process's own warm-up (JIT, sockets) would
    // otherwise weigh on the first run, always the base's. It also shows the base runs at all.
    await benchBuild(base.dir, ['--batches', '2000', '--connections', process.env.CONNECTIONS ?? '64']).catch((err: Error) => {
      throw new BaseFailed(err.message);
    });
    for (let i = 0; i < rounds; i++) await round();
    let c = compareRuns(a, b, minEffect, alpha);
    if (c.verdict === 'slower') {
      log('slower: one more round before the verdict stands');
      await round();
      c = compareRuns(a, b, minEffect, alpha);
    }
    const latency = process.env.AB_LATENCY === '0' ? null : await latencyCheck(base.dir, head, median(a), rounds, alpha);
    const ok = c.verdict !== 'slower' && (latency?.ok ?? true);
    process.stdout.write(
      `${JSON.stringify({ bench: 'ci', mode: 'ab', ok, base: base.sha, verdict: c.verdict, changePct: c.changePct, p: c.p, minEffectPct: minEffect, alpha, base_runs: a, head_runs: b, latency })}\n`,
    );
    return ok;
  } catch (err) {
    if (!(err instanceof BaseFailed)) throw err;
    process.stderr.write(`bench:ci: no A/B (the base failed: ${err.message}); the baseline-ratio check instead\n`);
    return undefined;
  } finally {
    base.cleanup();
  }
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((x, y) => x - y);
  return s.length % 2 ? (s[(s.length - 1) / 2] ?? 0) : ((s[s.length / 2 - 1] ?? 0) + (s[s.length / 2] ?? 0)) / 2;
};

/** One p99 of both builds compared: `higher` (this checkout's tail is fatter) fails. */
interface TailVerdict {
  base_runs: number[];
  head_runs: number[];
  changePct: number;
  p: number;
  verdict: 'higher' | 'lower' | 'no difference';
}

/**
 * The latency mode: ABBA rounds at `fraction` of the base's committed rate, open loop; the
 * submit and commit p99 of each run, compared as the rates are (Welch's t-test), a higher
 * p99 by AB_LATENCY_MIN_EFFECT percent at p < alpha failing, after one more round.
 */
async function latencyCheck(
  baseDir: string,
  headDir: string,
  peak: number,
  rounds: number,
  alpha: number,
): Promise<{ ok: boolean; rate: number; fraction: number; submitP99Ms: TailVerdict; commitP99Ms: TailVerdict }> {
  const { benchBuild } = await import('./ab.js');
  const { compareRuns } = await import('../src/bench/compare.js');
  const fraction = Number(process.env.AB_LATENCY_FRACTION ?? 0.5);
  if (!(fraction > 0 && fraction <= 1)) throw new Error(`AB_LATENCY_FRACTION must be in (0, 1]: ${process.env.AB_LATENCY_FRACTION}`);
  const minEffect = envInt('AB_LATENCY_MIN_EFFECT', 25, 1, 1000);
  const rate = Math.max(10, Math.round(peak * fraction));
  const args = ['--rate', String(rate), '--duration', `${envInt('AB_LATENCY_SECONDS', 15, 2, 600)}s`, '--connections', '128'];
  const runs = { a: { submit: [] as number[], commit: [] as number[] }, b: { submit: [] as number[], commit: [] as number[] } };
  const round = async (): Promise<void> => {
    for (const which of ['a', 'b', 'b', 'a'] as const) {
      const r = await benchBuild(which === 'a' ? baseDir : headDir, args);
      runs[which].submit.push(r.submitLatencyMs.p99);
      runs[which].commit.push(r.commitLatencyMs.p99);
      log(`${which === 'a' ? 'base' : 'head'} at ${rate}/s: submit p99 ${r.submitLatencyMs.p99} ms, commit p99 ${r.commitLatencyMs.p99} ms`);
    }
  };
  const tail = (a: number[], b: number[]): TailVerdict => {
    const c = compareRuns(a, b, minEffect, alpha);
    // compareRuns reads a higher mean as "faster"; for a latency it is the worse.
    const verdict = c.verdict === 'faster' ? 'higher' : c.verdict === 'slower' ? 'lower' : 'no difference';
    return { base_runs: a, head_runs: b, changePct: c.changePct, p: c.p, verdict };
  };
  for (let i = 0; i < rounds; i++) await round();
  let submit = tail(runs.a.submit, runs.b.submit);
  let commit = tail(runs.a.commit, runs.b.commit);
  if (submit.verdict === 'higher' || commit.verdict === 'higher') {
    log('a higher p99: one more round before the verdict stands');
    await round();
    submit = tail(runs.a.submit, runs.b.submit);
    commit = tail(runs.a.commit, runs.b.commit);
  }
  return { ok: submit.verdict !== 'higher' && commit.verdict !== 'higher', rate, fraction, submitP99Ms: submit, commitP99Ms: commit };
}

async function baselineCheck(): Promise<boolean> {
  const { runSubmit } = await import('./submit.js');
  const baseline = JSON.parse(readFileSync(new URL('./baseline.json', import.meta.url), 'utf8')) as {
    signatureBoundFraction: number;
  };
  const allowedDrop = 0.2;
  const floor = baseline.signatureBoundFraction * (1 - allowedDrop);
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
      mode: 'baseline',
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
  return ok;
}

try {
  const ok = (await abCheck()) ?? (await baselineCheck());
  if (!ok) process.exit(1);
} catch (err) {
  process.stderr.write(`bench:ci: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
