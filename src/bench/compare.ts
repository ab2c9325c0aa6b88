/**
 * `cairn bench compare A.json B.json`: do B's repeated runs commit fewer batches per second
 * than A's? Welch's t-test on the per-run rates (one figure per run, as Node.js core's
 * benchmark compare does; never the request count as n), and a difference is only reported
 * when it is significant (p < alpha) and at least the minimum effect size (autocannon-compare's
 * rule), so noise on a busy machine reads as "no difference".
 */
import { readFileSync } from 'node:fs';
import { fsReason, InputError } from '../cli/args.js';

export interface Comparison {
  metric: 'committedBatchesPerSec';
  a: { runs: number[]; mean: number; sd: number };
  b: { runs: number[]; mean: number; sd: number };
  /** (mean B − mean A) / mean A, in percent. */
  changePct: number;
  t: number;
  df: number;
  p: number;
  minEffectPct: number;
  alpha: number;
  verdict: 'no difference' | 'slower' | 'faster';
}

/** ln Γ(x), Lanczos approximation (g = 7, n = 9). */
function lnGamma(x: number): number {
  const c = [
    0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059, 12.507343278686905, -0.13857109526572012,
    9.9843695780195716e-6, 1.5056327351493116e-7,
  ];
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - lnGamma(1 - x);
  const xx = x - 1;
  let a = c[0] as number;
  const t = xx + 7.5;
  for (let i = 1; i < 9; i++) a += (c[i] as number) / (xx + i);
  return 0.5 * Math.log(2 * Math.PI) + (xx + 0.5) * Math.log(t) - t + Math.log(a);
}

/** Continued fraction of the incomplete beta function (modified Lentz). */
function betacf(a: number, b: number, x: number): number {
  const tiny = 1e-300;
  let c = 1;
  let d = 1 - ((a + b) * x) / (a + 1);
  if (Math.abs(d) < tiny) d = tiny;
  d = 1 / d;
  let h = d;
  for (let m = 1; m <= 300; m++) {
    const m2 = 2 * m;
    let aa = (m * (b - m) * x) / ((a + m2 - 1) * (a + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    aa = (-(a + m) * (a + b + m) * x) / ((a + m2) * (a + m2 + 1));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    const del = d * c;
    h *= del;
    if (Math.abs(del - 1) < 1e-12) break;
  }
  return h;
}

/** The regularized incomplete beta function I_x(a, b). */
export function incompleteBeta(x: number, a: number, b: number): number {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const front = Math.exp(lnGamma(a + b) - lnGamma(a) - lnGamma(b) + a * Math.log(x) + b * Math.log(1 - x));
  return x < (a + 1) / (a + b + 2) ? (front * betacf(a, b, x)) / a : 1 - (front * betacf(b, a, 1 - x)) / b;
}

const mean = (xs: number[]): number => xs.reduce((s, x) => s + x, 0) / xs.length;
const variance = (xs: number[]): number => {
  const m = mean(xs);
  return xs.reduce((s, x) => s + (x - m) ** 2, 0) / (xs.length - 1);
};

/** Welch's t-test: t, the Welch–Satterthwaite degrees of freedom and the two-sided p. */
export function welch(a: number[], b: number[]): { t: number; df: number; p: number } {
  const va = variance(a) / a.length;
  const vb = variance(b) / b.length;
  const diff = mean(b) - mean(a);
  if (va + vb === 0) return { t: diff === 0 ? 0 : Math.sign(diff) * Number.POSITIVE_INFINITY, df: a.length + b.length - 2, p: diff === 0 ? 1 : 0 };
  const t = diff / Math.sqrt(va + vb);
  const df = (va + vb) ** 2 / (va ** 2 / (a.length - 1) + vb ** 2 / (b.length - 1));
  return { t, df, p: incompleteBeta(df / (df + t * t), df / 2, 0.5) };
}

/**
 * The per-run committed rates of a `cairn bench --json` report (a `runs` array, or one run).
 * A report that is missing, unreadable, not a report or of one run is an input error (exit
 * 2), never a verdict: CI tells a broken input from a slower build by the exit status.
 */
export function runsOf(file: string, from = 'compare'): number[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new InputError(`${from}: cannot read the report ${file}: ${fsReason(err)}`);
  }
  let j: { runs?: Array<{ committedBatchesPerSec?: unknown }>; committedBatchesPerSec?: unknown };
  try {
    j = JSON.parse(text) as typeof j;
  } catch {
    throw new InputError(`${from}: cannot read the report ${file}: not JSON (a cairn bench --json report)`);
  }
  const runs = Array.isArray(j?.runs) ? j.runs.map((r) => r?.committedBatchesPerSec) : [j?.committedBatchesPerSec];
  if (runs.some((r) => typeof r !== 'number' || !Number.isFinite(r) || r <= 0))
    throw new InputError(`${from}: ${file} is not a cairn bench report (no committedBatchesPerSec in its runs)`);
  if (runs.length < 2) throw new InputError(`${from}: ${file} holds ${runs.length} run: a comparison needs repeated runs (cairn bench --repeat 5)`);
  return runs as number[];
}

export function compareRuns(a: number[], b: number[], minEffectPct = 5, alpha = 0.05): Comparison {
  const w = welch(a, b);
  const ma = mean(a);
  const mb = mean(b);
  const changePct = ((mb - ma) / ma) * 100;
  const shown = w.p < alpha && Math.abs(changePct) >= minEffectPct;
  const r = (x: number, d = 2): number => Math.round(x * 10 ** d) / 10 ** d;
  return {
    metric: 'committedBatchesPerSec',
    a: { runs: a, mean: r(ma), sd: r(Math.sqrt(variance(a))) },
    b: { runs: b, mean: r(mb), sd: r(Math.sqrt(variance(b))) },
    changePct: r(changePct),
    t: r(w.t, 3),
    df: r(w.df),
    p: Number(w.p.toPrecision(3)),
    minEffectPct,
    alpha,
    verdict: shown ? (changePct < 0 ? 'slower' : 'faster') : 'no difference',
  };
}

export function describe(c: Comparison, nameA = 'A', nameB = 'B'): string {
  const sign = c.changePct >= 0 ? '+' : '';
  return (
    `committed batches/s: ${nameA} ${c.a.mean} ± ${c.a.sd} (${c.a.runs.length} runs), ${nameB} ${c.b.mean} ± ${c.b.sd} (${c.b.runs.length} runs): ` +
    `${sign}${c.changePct}% (p = ${c.p}, Welch's t-test; a change counts at p < ${c.alpha} and |Δ| ≥ ${c.minEffectPct}%): ` +
    `${c.verdict === 'no difference' ? 'no difference' : `${nameB} is ${c.verdict}`}`
  );
}
