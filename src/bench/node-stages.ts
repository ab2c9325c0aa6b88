/**
 * The node's own view of a bench run, beside the client's: where a batch waited. When a target
 * serves `GET /metrics` (`--metrics on`), the bench scrapes it before and after the load and
 * reports, from the difference of the histograms' buckets, p50 and p99 of each stage of a
 * submission and of a commit (src/metrics.ts names them), and the HTTP thread's longest
 * event-loop delay over the run. A target without metrics gives nothing; the run goes on.
 */
import type { Target } from './target.js';

/** One stage over the run: how many were timed, and p50 / p99 in milliseconds (from the buckets). */
export interface NodeStage {
  stage: string;
  count: number;
  p50Ms: number;
  p99Ms: number;
}

export interface NodeStages {
  stages: NodeStage[];
  /**
   * The HTTP thread's longest event-loop delay between the two scrapes (ms), when reported:
   * prom-client's figure less its 10-ms sampling interval, which the figure includes.
   */
  eventLoopMaxMs: number | null;
}

/** The histograms read, in the order of a batch's way: [label, metric name, labels it must carry]. */
const STAGES: ReadonlyArray<[string, string, Record<string, string>]> = [
  ['received → verified', 'cairn_submit_stage_seconds', { stage: 'verify' }],
  ['verified → durable', 'cairn_submit_stage_seconds', { stage: 'durable' }],
  ['POST /batches (202)', 'cairn_http_request_duration_seconds', { interface: 'ledger', method: 'POST', route: '/batches', status: '202' }],
  ['acknowledged → committed', 'cairn_batch_commit_seconds', {}],
  ['block build (committer)', 'cairn_block_build_seconds', {}],
  ['block settle (HTTP thread)', 'cairn_block_settle_seconds', {}],
];
const LAG = 'cairn_nodejs_eventloop_lag_max_seconds';
/** prom-client samples the delay every 10 ms (its default precision, which src/metrics.ts keeps). */
const LAG_RESOLUTION_MS = 10;

/** Cumulative bucket counts by upper bound, per stage label; the lag gauge. */
export interface Scrape {
  buckets: Map<string, Map<number, number>>;
  lagSeconds: number | null;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** Reads the stage histograms and the lag gauge from a Prometheus text exposition. */
export function parseScrape(text: string): Scrape {
  const buckets = new Map<string, Map<number, number>>();
  let lagSeconds: number | null = null;
  for (const line of text.split('\n')) {
    const m = SAMPLE.exec(line);
    if (!m) continue;
    const [, name = '', rawLabels = '', rawValue = ''] = m;
    const value = Number(rawValue);
    if (!Number.isFinite(value)) continue;
    if (name === LAG) {
      lagSeconds = value;
      continue;
    }
    if (!name.endsWith('_bucket')) continue;
    const labels: Record<string, string> = {};
    for (const l of rawLabels.matchAll(LABEL)) labels[l[1] ?? ''] = l[2] ?? '';
    const le = labels.le === '+Inf' ? Number.POSITIVE_INFINITY : Number(labels.le);
    for (const [stage, metric, want] of STAGES) {
      if (name !== `${metric}_bucket` || !Object.entries(want).every(([k, v]) => labels[k] === v)) continue;
      let b = buckets.get(stage);
      if (!b) {
        b = new Map();
        buckets.set(stage, b);
      }
      b.set(le, (b.get(le) ?? 0) + value);
    }
  }
  return { buckets, lagSeconds };
}

/**
 * The `q` quantile of a cumulative histogram, interpolated linearly inside its bucket as
 * Prometheus's histogram_quantile does (the +Inf bucket answers its lower bound).
 */
export function quantile(cumulative: ReadonlyArray<[number, number]>, q: number): number {
  const total = cumulative.at(-1)?.[1] ?? 0;
  if (total <= 0) return 0;
  const rank = q * total;
  let prevLe = 0;
  let prevCount = 0;
  for (const [le, count] of cumulative) {
    if (count >= rank) {
      if (!Number.isFinite(le)) return prevLe;
      const inBucket = count - prevCount;
      return inBucket > 0 ? prevLe + ((le - prevLe) * (rank - prevCount)) / inBucket : le;
    }
    prevLe = le;
    prevCount = count;
  }
  return prevLe;
}

/** The stages over the run: the buckets of `after` less those of `before`, summed over the targets. */
export function stagesBetween(before: Scrape[], after: Scrape[]): NodeStages {
  const stages: NodeStage[] = [];
  for (const [stage] of STAGES) {
    const diff = new Map<number, number>();
    for (const s of after) for (const [le, n] of s.buckets.get(stage) ?? []) diff.set(le, (diff.get(le) ?? 0) + n);
    for (const s of before) for (const [le, n] of s.buckets.get(stage) ?? []) diff.set(le, (diff.get(le) ?? 0) - n);
    const cumulative = [...diff].sort((a, b) => a[0] - b[0]);
    const count = cumulative.at(-1)?.[1] ?? 0;
    if (count <= 0) continue;
    stages.push({ stage, count, p50Ms: quantile(cumulative, 0.5) * 1000, p99Ms: quantile(cumulative, 0.99) * 1000 });
  }
  const lags = after.map((s) => s.lagSeconds).filter((x): x is number => x !== null);
  return { stages, eventLoopMaxMs: lags.length > 0 ? Math.max(0, Math.max(...lags) * 1000 - LAG_RESOLUTION_MS) : null };
}

/** Scrapes each target's /metrics; null when one does not serve them (metrics off). */
export async function scrapeTargets(targets: readonly Target[]): Promise<Scrape[] | null> {
  const out: Scrape[] = [];
  for (const t of targets) {
    try {
      const r = await t.request('GET', '/metrics', undefined, undefined, 10_000);
      if (r.status !== 200 || !r.body.includes('cairn_')) return null;
      out.push(parseScrape(r.body));
    } catch {
      return null;
    }
  }
  return out;
}
