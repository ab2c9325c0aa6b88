/**
 * `cairn bench`: load-tests any Sawtooth 1.x REST API (src/bench/), and
 * `cairn bench compare A.json B.json` tells whether B's runs are slower than A's.
 */
import { isMain, jsonRequested, Output, parseOrUsage, runCommand, UsageError } from './args.js';
import { numOption, parseBenchArgs } from '../bench/options.js';
import { runBench } from '../bench/bench.js';
import { compareRuns, describe, runsOf } from '../bench/compare.js';

export const USAGE = `usage: cairn bench (--url URL… | --spawn) [options]
       cairn bench compare A.json B.json [--min-effect PCT] [--alpha P] [--json] [--quiet]
Loads a Sawtooth 1.x REST API with signed batches and reports the committed rate and the
submit and commit latencies; compare says whether a run got slower than another.
target:
  --url URL          a Sawtooth 1.x REST API; several (repeated or comma-separated) are loaded round-robin
  --spawn            start a Cairn node of this package on a temp directory for the run
size and schedule (closed loop unless --rate):
  --batches N        batches to submit (default 1000)
  --duration D       run for D instead (30s, 2m, 500ms)
  --connections C    requests in flight (closed loop: each sends when answered; default 16)
  --rate R[,R2…]     open loop at R batches/s, latency from each batch's intended send time;
                     several rates are steps, each --step D long (e.g. --rate 500,1000,2000 --step 30s)
  --repeat N         N runs; the report holds a "runs" array (for compare)
workload (intkey):
  --txns K           transactions per batch (default 1)
  --signers S        signing keys, batches spread over them (default 16)
  --keyspace K       0: every op sets a new name; else ops after the first K are incs of earlier names
  --invalid F        fraction of batches made invalid on purpose (0..1)
  --payloads FILE    send pre-built batch lists instead: one base64 or hex BatchList per line
  --workers W        generator worker threads (default: one per core)
reports (each file checked writable before the load starts):
  --json FILE        every figure, the HDR histograms, the timeline, the settings;
                     --json - (or a bare --json last) prints it on stdout instead of the summary
  --markdown FILE    a table for a CI comment
  --html FILE        a self-contained page with throughput and latency over time
  --baseline FILE    compare with an earlier --repeat report; exit 1 when slower
  --min-effect PCT   smallest change that counts (default 5)
  --alpha P          significance level of Welch's t-test (default 0.05)
  --commit-timeout S a batch not committed S seconds after it was sent counts as an error (default 60)
  --quiet            the summary only: no progress lines or notes
exit status: 0 done (compare, --baseline: no difference or faster), 1 failed (compare, --baseline: B is slower),
             2 usage or input error (a bad value, a report or payload file that is missing, unreadable,
             not a report or of a single run, a report file that cannot be written), before any load
`;

function compare(argv: string[]): number {
  const args = parseOrUsage(argv, ['min-effect', 'alpha'], ['json']);
  if (args.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const [a, b, extra] = args.positional;
  if (a === undefined || b === undefined) throw new UsageError('compare needs two reports: cairn bench compare A.json B.json');
  if (extra !== undefined) throw new UsageError(`unexpected argument ${extra}`);
  const minEffect = numOption(args.options.get('min-effect'), 'min-effect', 5, 0, 100);
  const alpha = numOption(args.options.get('alpha'), 'alpha', 0.05, 0.0001, 0.5);
  const c = compareRuns(runsOf(a), runsOf(b), minEffect, alpha);
  new Output(args).result(c, describe(c, a, b));
  return c.verdict === 'slower' ? 1 : 0;
}

export async function run(argv: string[]): Promise<number> {
  if (argv[0] === 'compare') return compare(argv.slice(1));
  const { options, help } = parseBenchArgs(argv);
  if (help) {
    process.stdout.write(USAGE);
    return 0;
  }
  return runBench(options, {
    out: (s) => process.stdout.write(s),
    err: (s) => process.stderr.write(s),
    tty: process.stderr.isTTY === true,
  });
}

if (isMain(import.meta.url)) void runCommand('cairn bench', USAGE, () => run(process.argv.slice(2)), jsonRequested(process.argv.slice(2), true));
