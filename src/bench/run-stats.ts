/**
 * The figures of a bench load run (src/bench/run.ts): the shapes of its result (latency
 * percentiles with their HDR histogram, the per-second timeline, the steps of an open-loop
 * run, the run's totals) and its schedule, and the histogram they are measured in. The
 * report (report.ts) and the comparison read these shapes; run.ts fills them.
 */
import * as hdr from 'hdr-histogram-js';

export interface Latency {
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
  mean: number;
  count: number;
  /** The HDR histogram of µs, compressed base64 (hdr-histogram-js `decodeFromCompressedBase64`). */
  histogram: string;
}

export interface Tick {
  /** Seconds since the start. */
  t: number;
  offered: number;
  achieved: number;
  committed: number;
  pending: number;
  http429: number;
  errors: number;
  submitP50Ms: number;
  submitP99Ms: number;
  commitP50Ms: number;
  commitP99Ms: number;
}

export interface StepResult {
  rate: number;
  offeredRate: number;
  achievedRate: number;
  committedBatchesPerSec: number;
  submitLatencyMs: Latency;
  commitLatencyMs: Latency;
}

export interface RunStats {
  sent: number;
  accepted: number;
  committed: number;
  committedTxns: number;
  invalid: number;
  http429: number;
  errors: number;
  uncommitted: number;
  generatorStalls: number;
  /**
   * The bench's own event loop over the run, ms (p99 and max of its delay): where it is high,
   * the client, not the node, held the answers it measured.
   */
  clientEventLoopMs: { p99: number; max: number };
  sendSeconds: number;
  elapsedSeconds: number;
  offeredRate: number;
  achievedRate: number;
  committedBatchesPerSec: number;
  committedTxnsPerSec: number;
  submitLatencyMs: Latency;
  commitLatencyMs: Latency;
  errorSamples: string[];
  timeline: Tick[];
  steps: StepResult[];
}

export interface Schedule {
  connections: number;
  /** Open loop: one entry per step; empty: closed loop. */
  rates: number[];
  /** Length of the run (closed loop, or open loop at one rate) or of each step, ms; 0: until the source is done. */
  durationMs: number;
  txnsPerBatch: number;
  commitTimeoutMs: number;
}

export interface Progress {
  tick(t: Tick): void;
}

export function newHistogram(): hdr.Histogram {
  return hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000, numberOfSignificantValueDigits: 3 });
}

/** µs (the histograms' unit) to ms, rounded to the µs. */
export const ms = (us: number): number => Math.round(us) / 1000;

export function latency(h: hdr.Histogram): Latency {
  const empty = h.totalCount === 0;
  return {
    p50: empty ? 0 : ms(h.getValueAtPercentile(50)),
    p90: empty ? 0 : ms(h.getValueAtPercentile(90)),
    p99: empty ? 0 : ms(h.getValueAtPercentile(99)),
    p999: empty ? 0 : ms(h.getValueAtPercentile(99.9)),
    max: empty ? 0 : ms(h.maxValue),
    mean: empty ? 0 : ms(h.mean),
    count: h.totalCount,
    histogram: hdr.encodeIntoCompressedBase64(h),
  };
}
