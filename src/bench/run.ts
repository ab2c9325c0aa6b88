/**
 * One load run of `cairn bench`: sends the source's batches to the targets (round-robin),
 * closed loop (C connections, each sends its next batch when the last one is answered) or
 * open loop (batch k of a step is due at step start + k / rate, whatever the answers; its
 * latencies are measured from that intended time, so a stalled server cannot hide its stall
 * by slowing the sender: no coordinated omission). A 429 is counted and the batch is sent
 * again after the server's Retry-After (else a short back-off). Commits are tracked per
 * target by POST /batch_statuses: a long poll with `wait` on the oldest pending batch (it
 * returns when that batch's block is committed), then one look without wait at every
 * pending batch, which commits in the same blocks. The shapes of its result and the
 * histogram it measures in are in run-stats.ts (re-exported here).
 */
import type * as hdr from 'hdr-histogram-js';
import { type Reply, type Target, retryAfterMs, why } from './target.js';
import type { BatchSource } from './generator.js';
import { latency, ms, newHistogram, type Progress, type RunStats, type Schedule, type Tick } from './run-stats.js';
import { monitorEventLoopDelay } from 'node:perf_hooks';

export { latency, newHistogram, type Latency, type Progress, type RunStats, type Schedule, type StepResult, type Tick } from './run-stats.js';

const sleep = (msec: number): Promise<void> => new Promise((r) => setTimeout(r, msec));

interface Sent {
  /** Intended (open loop) or first send time, performance.now() ms. */
  t0: number;
  step: number;
  txns: number;
}

interface StepAcc {
  rate: number;
  start: number;
  end: number;
  offered: number;
  accepted: number;
  committed: number;
  lastCommit: number;
  offerSeconds: number;
  submit: hdr.Histogram;
  commit: hdr.Histogram;
}

export async function runLoad(targets: Target[], source: BatchSource, s: Schedule, progress?: Progress): Promise<RunStats> {
  /** Test hook: a delay before every submit, to show that `compare` sees a slower run. */
  const submitDelayMs = Number(process.env.CAIRN_BENCH_TEST_SUBMIT_DELAY_MS ?? 0) || 0;
  const submitH = newHistogram();
  const commitH = newHistogram();
  const tickSubmit = newHistogram();
  const tickCommit = newHistogram();
  const errorSamples: string[] = [];
  const c = { sent: 0, offered: 0, accepted: 0, committed: 0, committedTxns: 0, invalid: 0, http429: 0, errors: 0, uncommitted: 0, stalls: 0 };
  const pending = targets.map(() => new Map<string, Sent>());
  const steps: StepAcc[] = (s.rates.length ? s.rates : [0]).map((rate) => ({
    rate,
    start: 0,
    end: 0,
    offered: 0,
    accepted: 0,
    committed: 0,
    lastCommit: 0,
    offerSeconds: 0,
    submit: newHistogram(),
    commit: newHistogram(),
  }));
  let sending = true;
  /** Open loop: the scheduled span of the offers (k batches due over k intervals), s. */
  let offerSeconds = 0;
  let lastCommitAt = 0;
  let rr = 0;
  const noteError = (msg: string): void => {
    c.errors++;
    if (errorSamples.length < 5) errorSamples.push(msg);
  };
  // The client's own delays: a stalled bench thread holds every answer it is timing.
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const t0 = performance.now();
  const wakers: Array<(() => void) | undefined> = targets.map(() => undefined);

  /** Sends one batch until it is accepted, refused or fails; records its submit latency from `from`. */
  const submit = async (body: Uint8Array, ids: string[], from: number, step: number): Promise<void> => {
    const ti = rr++ % targets.length;
    const target = targets[ti] as Target;
    const acc = steps[step] as StepAcc;
    c.sent++;
    for (let attempt = 0; ; attempt++) {
      if (submitDelayMs > 0) await sleep(submitDelayMs);
      let r: Reply;
      try {
        r = await target.request('POST', '/batches', body);
      } catch (err) {
        submitH.recordValue(Math.max(1, (performance.now() - from) * 1000));
        noteError(`POST ${target.url}/batches: ${why(err)}`);
        return;
      }
      if (r.status === 429) {
        c.http429++;
        // As the server asks; without Retry-After, an exponential back-off from 10 ms to 1 s.
        await sleep(retryAfterMs(r.retryAfter) ?? Math.min(1000, 10 * 2 ** Math.min(attempt, 7)));
        // Bounded: a batch refused for longer than the commit timeout is given up as an error.
        if (performance.now() - from > s.commitTimeoutMs) {
          noteError(`POST ${target.url}/batches: still 429 after ${attempt + 1} tries`);
          return;
        }
        continue;
      }
      const dt = Math.max(1, (performance.now() - from) * 1000);
      submitH.recordValue(dt);
      tickSubmit.recordValue(dt);
      acc.submit.recordValue(dt);
      if (r.status !== 202) {
        noteError(`POST ${target.url}/batches: HTTP ${r.status} ${r.body.slice(0, 200)}`);
        return;
      }
      c.accepted++;
      acc.accepted++;
      const map = pending[ti] as Map<string, Sent>;
      for (const id of ids) map.set(id, { t0: from, step, txns: s.txnsPerBatch });
      wakers[ti]?.();
      return;
    }
  };

  const resolved = (ti: number, id: string, st: string, now: number): void => {
    const map = pending[ti] as Map<string, Sent>;
    const p = map.get(id);
    if (!p) return;
    if (st === 'COMMITTED') {
      map.delete(id);
      const dt = Math.max(1, (now - p.t0) * 1000);
      commitH.recordValue(dt);
      tickCommit.recordValue(dt);
      const acc = steps[p.step] as StepAcc;
      acc.commit.recordValue(dt);
      acc.committed++;
      acc.lastCommit = now;
      c.committed++;
      c.committedTxns += p.txns;
      lastCommitAt = now;
    } else if (st === 'INVALID') {
      map.delete(id);
      c.invalid++;
    } else if (now - p.t0 > s.commitTimeoutMs) {
      map.delete(id);
      c.uncommitted++;
      noteError(`batch ${id.slice(0, 16)}… still ${st} after ${s.commitTimeoutMs / 1000} s`);
    }
  };

  const statuses = async (target: Target, ids: string[], wait: number): Promise<Array<{ id: string; status: string }>> => {
    const r = await target.request('POST', `/batch_statuses${wait > 0 ? `?wait=${wait}` : ''}`, Buffer.from(JSON.stringify(ids)), 'application/json');
    const body = JSON.parse(r.body) as { data?: Array<{ id: string; status: string }> };
    if (r.status !== 200 || !Array.isArray(body.data)) throw new Error(`POST /batch_statuses answered HTTP ${r.status}`);
    return body.data;
  };

  const track = async (ti: number): Promise<void> => {
    const target = targets[ti] as Target;
    const map = pending[ti] as Map<string, Sent>;
    let failures = 0;
    while (sending || map.size > 0) {
      if (map.size === 0) {
        await new Promise<void>((r) => {
          wakers[ti] = r;
          setTimeout(r, 200);
        });
        wakers[ti] = undefined;
        continue;
      }
      const cycle = performance.now();
      try {
        const [oldest] = map.keys() as IterableIterator<string>;
        const first = await statuses(target, [oldest as string], 5);
        for (const d of first) resolved(ti, d.id, d.status, performance.now());
        const ids = [...map.keys()].slice(0, 5000);
        for (let i = 0; i < ids.length; i += 1000) {
          const got = await statuses(target, ids.slice(i, i + 1000), 0);
          const now = performance.now();
          for (const d of got) resolved(ti, d.id, d.status, now);
        }
        failures = 0;
      } catch (err) {
        // A failed look is retried; every pending batch still ends by the commit timeout.
        if (++failures === 1 && errorSamples.length < 5) errorSamples.push(`commit tracking at ${target.url}: ${why(err)}`);
        const now = performance.now();
        for (const id of [...map.keys()]) resolved(ti, id, 'UNKNOWN', now);
        await sleep(Math.min(1000, 50 * failures));
      }
      // A server that ignores `wait` is not polled in a busy loop.
      if (performance.now() - cycle < 5) await sleep(5);
    }
  };

  let lastTick = t0;

  // Per-second samples for the timeline (rates are per second over the interval).
  const timeline: Tick[] = [];
  const prev = { offered: 0, accepted: 0, committed: 0 };
  const takeTick = (): Tick => {
    const now = performance.now();
    const secs = Math.max((now - lastTick) / 1000, 1e-3);
    lastTick = now;
    const t: Tick = {
      t: Math.round((now - t0) / 100) / 10,
      offered: Math.round((c.offered - prev.offered) / secs),
      achieved: Math.round((c.accepted - prev.accepted) / secs),
      committed: Math.round((c.committed - prev.committed) / secs),
      pending: pending.reduce((n, m) => n + m.size, 0),
      http429: c.http429,
      errors: c.errors,
      submitP50Ms: tickSubmit.totalCount ? ms(tickSubmit.getValueAtPercentile(50)) : 0,
      submitP99Ms: tickSubmit.totalCount ? ms(tickSubmit.getValueAtPercentile(99)) : 0,
      commitP50Ms: tickCommit.totalCount ? ms(tickCommit.getValueAtPercentile(50)) : 0,
      commitP99Ms: tickCommit.totalCount ? ms(tickCommit.getValueAtPercentile(99)) : 0,
    };
    prev.offered = c.offered;
    prev.accepted = c.accepted;
    prev.committed = c.committed;
    tickSubmit.reset();
    tickCommit.reset();
    timeline.push(t);
    progress?.tick(t);
    return t;
  };
  const ticker = setInterval(takeTick, 1000);

  const trackers = targets.map((_, ti) => track(ti));
  let tSent = t0;
  try {
    if (s.rates.length === 0) {
      const end = s.durationMs > 0 ? t0 + s.durationMs : Number.POSITIVE_INFINITY;
      const acc = steps[0] as StepAcc;
      acc.start = t0;
      const worker = async (): Promise<void> => {
        for (;;) {
          if (performance.now() >= end) return;
          let b = source.take();
          if (!b) {
            if (source.done) return;
            c.stalls++;
            await source.ready();
            b = source.take();
            if (!b) continue;
          }
          c.offered++;
          acc.offered++;
          await submit(b.body, b.ids, performance.now(), 0);
        }
      };
      await Promise.all(Array.from({ length: s.connections }, () => worker()));
      acc.end = performance.now();
    } else {
      let stepStart = t0;
      for (let si = 0; si < s.rates.length; si++) {
        const rate = s.rates[si] as number;
        const acc = steps[si] as StepAcc;
        acc.start = stepStart;
        const interval = 1000 / rate;
        const stepEnd = s.durationMs > 0 ? stepStart + s.durationMs : Number.POSITIVE_INFINITY;
        /** Batches offered (due) so far in this step, and how many of them were sent: the rest wait, in order. */
        let k = 0;
        let sentK = 0;
        let inFlight = 0;
        /** The submits in flight (at most `connections`). */
        const running = new Set<Promise<void>>();
        let freed: (() => void) | undefined;
        for (;;) {
          const now = performance.now();
          // Every batch due by now is offered; batch j of the step is due at stepStart + j × interval.
          while (stepStart + k * interval <= now && stepStart + k * interval < stepEnd) {
            if (s.durationMs === 0 && c.offered >= source.total) break;
            k++;
            c.offered++;
            acc.offered++;
          }
          while (sentK < k && inFlight < s.connections) {
            let b = source.take();
            if (!b) {
              if (source.done) {
                sentK = k;
                break;
              }
              c.stalls++;
              await source.ready();
              b = source.take();
              if (!b) continue;
            }
            const due = stepStart + sentK * interval;
            sentK++;
            inFlight++;
            const p: Promise<void> = submit(b.body, b.ids, due, si).finally(() => {
              inFlight--;
              running.delete(p);
              freed?.();
            });
            running.add(p);
          }
          const nextDue = stepStart + k * interval;
          const over = nextDue >= stepEnd || (s.durationMs === 0 && (c.offered >= source.total || source.done));
          if (over && sentK === k) break;
          await new Promise<void>((r) => {
            freed = r;
            setTimeout(r, Math.max(0, Math.min(nextDue - performance.now(), 50)));
          });
          freed = undefined;
        }
        await Promise.all([...running]);
        acc.end = performance.now();
        acc.offerSeconds = (k * interval) / 1000;
        offerSeconds += acc.offerSeconds;
        stepStart = Math.max(performance.now(), stepEnd === Number.POSITIVE_INFINITY ? 0 : stepEnd);
      }
    }
    tSent = performance.now();
  } finally {
    sending = false;
    for (const w of wakers) w?.();
  }
  await Promise.all(trackers);
  loop.disable();
  clearInterval(ticker);
  takeTick();
  const tEnd = lastCommitAt > 0 ? lastCommitAt : performance.now();
  const sendSeconds = Math.max((tSent - t0) / 1000, 1e-3);
  const elapsedSeconds = Math.max((tEnd - t0) / 1000, 1e-3);
  const r1 = (x: number): number => Math.round(x * 10) / 10;
  return {
    sent: c.sent,
    accepted: c.accepted,
    committed: c.committed,
    committedTxns: c.committedTxns,
    invalid: c.invalid,
    http429: c.http429,
    errors: c.errors,
    uncommitted: c.uncommitted,
    generatorStalls: c.stalls,
    // The histogram counts in nanoseconds, less the 10-ms sampling interval itself.
    clientEventLoopMs: { p99: r1(Math.max(0, loop.percentile(99) / 1e6 - 10)), max: r1(Math.max(0, loop.max / 1e6 - 10)) },
    sendSeconds: r1(sendSeconds),
    elapsedSeconds: r1(elapsedSeconds),
    // Open loop: the rate asked for; closed loop: batches sent per second of sending.
    offeredRate: r1(c.offered / (offerSeconds > 0 ? offerSeconds : sendSeconds)),
    achievedRate: r1(c.accepted / sendSeconds),
    committedBatchesPerSec: r1(c.committed / elapsedSeconds),
    committedTxnsPerSec: r1(c.committedTxns / elapsedSeconds),
    submitLatencyMs: latency(submitH),
    commitLatencyMs: latency(commitH),
    errorSamples,
    timeline,
    steps: s.rates.length
      ? steps.map((a) => {
          const secs = Math.max((a.end - a.start) / 1000, 1e-3);
          return {
            rate: a.rate,
            offeredRate: r1(a.offered / Math.max(a.offerSeconds, 1e-3)),
            achievedRate: r1(a.accepted / secs),
            committedBatchesPerSec: r1(a.committed / Math.max(((a.lastCommit || a.end) - a.start) / 1000, 1e-3)),
            submitLatencyMs: latency(a.submit),
            commitLatencyMs: latency(a.commit),
          };
        })
      : [],
  };
}
