/**
 * `cairn bench`: checks the settings and the targets, measures the generator, runs the load
 * (`--repeat` times), prints the summary and writes the reports; with `--baseline`, compares
 * the runs with an earlier report and fails when they are slower.
 */
import { writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { randomPrivateKey } from '../crypto/secp256k1.js';
import type { BenchOptions } from './options.js';
import { Generator, ListSource, SignerPool, type Batch, type BatchSource } from './generator.js';
import { loadPayloads } from './payloads.js';
import { checkSawtooth, spawnNode, Target, type Spawned } from './target.js';
import { runLoad } from './run.js';
import type { RunStats } from './run-stats.js';
import { html, markdown, progressLine, summary, type BenchResult } from './report.js';
import { compareRuns, describe, runsOf, type Comparison } from './compare.js';
import { scrapeTargets, stagesBetween } from './node-stages.js';

export type { BenchResult } from './report.js';

export interface Io {
  /** The result: the text summary, or the JSON report with `--json -`. */
  out(s: string): void;
  /** Progress and notes: nothing is written here with --quiet or with the report on stdout. */
  err(s: string): void;
  /** A terminal: one progress line rewritten in place; else a plain line every 5 s. */
  tty: boolean;
}

/** A one-line failure of the run (no usage to print). */
export class BenchError extends Error {}

const AHEAD_MAX = 200_000;

async function oneRun(
  o: BenchOptions,
  targets: Target[],
  payloads: Batch[] | undefined,
  pool: SignerPool | undefined,
  io: Io,
  index: number,
): Promise<BenchResult> {
  const quiet = o.quiet || o.json === '-';
  const startedAt = new Date().toISOString();
  let source: BatchSource;
  let capacity: number;
  let workers = 0;
  if (payloads || !pool) {
    const list = payloads ?? [];
    source = new ListSource(o.batches > 0 ? list.slice(0, o.batches) : list);
    capacity = Number.POSITIVE_INFINITY;
  } else {
    const maxRate = Math.max(0, ...o.rates);
    const spec = {
      prefix: `b${randomBytes(4).toString('hex')}r${index}_`,
      txns: o.txns,
      signerKeys: Array.from({ length: o.signers }, () => randomPrivateKey()),
      keyspace: o.keyspace,
      // Incs reach back past every batch that can be in flight with them, so the set of the
      // name they touch was accepted first (a ledger runs accepted batches in order).
      incGap: Math.max(4 * o.connections, 64, Math.ceil(maxRate / 2)) * o.txns,
      invalidEvery: o.invalid > 0 ? Math.max(1, Math.round(1 / o.invalid)) : 0,
    };
    // A timed open-loop run offers a known number of batches; a timed closed loop takes what the ledger can.
    const stepSecs = (o.stepMs || o.durationMs) / 1000;
    const total = o.batches > 0 ? o.batches : o.rates.length ? o.rates.reduce((n, r) => n + Math.ceil(r * stepSecs), 0) : Number.POSITIVE_INFINITY;
    const gen = new Generator(spec, total, 0, pool);
    workers = gen.workers;
    try {
      capacity = await gen.measure(2000);
      // Everything is signed before the clock starts, up to AHEAD_MAX; a longer closed-loop run
      // starts with 5 s of the generator's output and is topped up while it runs.
      const ahead = Math.min(AHEAD_MAX, Number.isFinite(total) ? total : Math.max(2000, Math.ceil(capacity * 5)));
      if (!quiet)
        io.err(
          `generator: ${Math.round(capacity).toLocaleString('en-US')} batches/s of ${o.txns} txn${o.txns === 1 ? '' : 's'} with ${workers} worker threads; signing ${ahead.toLocaleString('en-US')} batches ahead of the clock\n`,
        );
      await gen.fill(ahead);
    } catch (err) {
      await gen.close();
      throw err;
    }
    source = gen;
  }
  let lastPlain = Number.NEGATIVE_INFINITY;
  const progress = quiet
    ? undefined
    : {
        tick: (t: Parameters<typeof progressLine>[0]): void => {
          if (io.tty) io.err(`\r\x1b[2K${progressLine(t)}`);
          else if (t.t - lastPlain >= 5) {
            lastPlain = t.t;
            io.err(`${progressLine(t)}\n`);
          }
        },
      };
  // The node's stage histograms, read just before the clock starts and after the load.
  const scrapedBefore = await scrapeTargets(targets);
  let stats: RunStats;
  try {
    stats = await runLoad(
      targets,
      source,
      {
        connections: o.connections,
        rates: o.rates,
        durationMs: o.stepMs || o.durationMs,
        txnsPerBatch: payloads ? 1 : o.txns,
        commitTimeoutMs: o.commitTimeoutMs,
      },
      progress,
    );
  } finally {
    await source.close();
    if (io.tty && !quiet) io.err('\n');
  }
  if (stats.committed === 0) {
    const why = stats.errorSamples[0] ? `; first error: ${stats.errorSamples[0]}` : '';
    throw new BenchError(
      `no batch was committed: ${stats.sent} sent, ${stats.accepted} accepted, ${stats.invalid} invalid, ${stats.http429} answered 429, ${stats.errors} errors${why}`,
    );
  }
  const scrapedAfter = scrapedBefore ? await scrapeTargets(targets) : null;
  const { urls: _u, json: _j, markdown: _m, html: _h, baseline: _b, quiet: _q, ...settings } = o;
  return {
    tool: 'cairn bench',
    startedAt,
    targets: targets.map((t) => t.url),
    settings,
    generatorCapacityBatchesPerSec: Number.isFinite(capacity) ? Math.round(capacity) : 0,
    generatorWorkers: workers,
    ...stats,
    nodeStages: scrapedBefore && scrapedAfter ? stagesBetween(scrapedBefore, scrapedAfter) : null,
  };
}

function write(file: string, text: string): void {
  try {
    writeFileSync(file, text);
  } catch (err) {
    throw new BenchError(`cannot write ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

export async function runBench(o: BenchOptions, io: Io): Promise<number> {
  // Inputs that can be checked without the ledger are checked first (usage errors: exit 2).
  const payloads = o.payloads !== undefined ? loadPayloads(o.payloads) : undefined;
  const baseline = o.baseline !== undefined ? runsOf(o.baseline, '--baseline') : undefined;
  const toStdout = o.json === '-';
  const note = (s: string): void => {
    if (!o.quiet && !toStdout) io.err(s);
  };
  let spawned: Spawned | undefined;
  let pool: SignerPool | undefined;
  const targets: Target[] = [];
  try {
    if (o.spawn) {
      note('starting a Cairn node on a temp directory…\n');
      spawned = await spawnNode();
    }
    for (const u of spawned ? [spawned.url] : o.urls) targets.push(new Target(u, o.connections));
    for (const t of targets) await checkSawtooth(t);
    if (!payloads) pool = new SignerPool(o.workers);
    const runs: BenchResult[] = [];
    for (let i = 0; i < o.repeat; i++) {
      if (o.repeat > 1) note(`run ${i + 1} of ${o.repeat}\n`);
      runs.push(await oneRun(o, targets, payloads, pool, io, i));
    }
    // With --repeat, the top-level figures are the median run's (by committed rate); every run is in `runs`.
    const median = [...runs].sort((a, b) => a.committedBatchesPerSec - b.committedBatchesPerSec)[Math.floor((runs.length - 1) / 2)] as BenchResult;
    const result: BenchResult & { repeat?: number; runs?: BenchResult[]; baseline?: Comparison } =
      o.repeat > 1 ? { ...median, repeat: o.repeat, runs } : median;
    const c = baseline
      ? compareRuns(
          baseline,
          runs.map((r) => r.committedBatchesPerSec),
          o.minEffect,
          o.alpha,
        )
      : undefined;
    if (toStdout) io.out(`${JSON.stringify(c ? { ...result, baseline: c } : result)}\n`);
    else {
      io.out(summary(median));
      if (o.repeat > 1) io.out(`  runs (committed batches/s): ${runs.map((r) => r.committedBatchesPerSec).join(', ')}\n`);
      if (c) io.out(`${describe(c, 'baseline', 'this run')}\n`);
    }
    if (o.json && !toStdout) write(o.json, `${JSON.stringify(result, null, 1)}\n`);
    if (o.markdown) write(o.markdown, markdown(result));
    if (o.html) write(o.html, html(median));
    if (c) return c.verdict === 'slower' ? 1 : 0;
    return 0;
  } finally {
    for (const t of targets) t.close();
    await pool?.close();
    await spawned?.stop();
  }
}
