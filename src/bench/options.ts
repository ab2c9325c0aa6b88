/**
 * `cairn bench` settings: parsed from the command line and checked against their ranges, so
 * that a wrong setting is a one-line usage error, never a run with a bogus figure.
 */
import { checkWritable, parseOrUsage, UsageError } from '../cli/args.js';

export interface BenchOptions {
  urls: string[];
  spawn: boolean;
  /** Batches to submit (closed loop, or open loop at one rate); 0 when the run is timed. */
  batches: number;
  /** Length of a timed run (or of each step), ms; 0 when the run counts batches. */
  durationMs: number;
  connections: number;
  /** Open-loop arrival rates in batches/s (several: steps); empty for a closed loop. */
  rates: number[];
  stepMs: number;
  txns: number;
  signers: number;
  keyspace: number;
  /** Fraction of batches made invalid on purpose (an inc of a name never set). */
  invalid: number;
  payloads: string | undefined;
  /** The JSON report's file; `-`: stdout, instead of the text summary (a bare `--json` as the last argument too). */
  json: string | undefined;
  markdown: string | undefined;
  html: string | undefined;
  baseline: string | undefined;
  repeat: number;
  workers: number;
  commitTimeoutMs: number;
  minEffect: number;
  alpha: number;
  quiet: boolean;
}

export const VALUED = [
  'url',
  'batches',
  'duration',
  'connections',
  'rate',
  'step',
  'txns',
  'signers',
  'keyspace',
  'invalid',
  'payloads',
  'json',
  'markdown',
  'html',
  'baseline',
  'repeat',
  'workers',
  'commit-timeout',
  'min-effect',
  'alpha',
] as const;

/** A whole number option within [min, max], or a usage error naming it. */
export function intOption(v: string | undefined, name: string, dflt: number, min: number, max: number): number {
  if (v === undefined) return dflt;
  if (!/^\d+$/.test(v)) throw new UsageError(`--${name} takes a whole number, got "${v}"`);
  const n = Number(v);
  if (n < min || n > max) throw new UsageError(`--${name} must be between ${min} and ${max}, got ${v}`);
  return n;
}

/** A number option within [min, max] (decimals allowed), or a usage error naming it. */
export function numOption(v: string | undefined, name: string, dflt: number, min: number, max: number): number {
  if (v === undefined) return dflt;
  if (!/^\d+(\.\d+)?$/.test(v)) throw new UsageError(`--${name} takes a number, got "${v}"`);
  const n = Number(v);
  if (n < min || n > max) throw new UsageError(`--${name} must be between ${min} and ${max}, got ${v}`);
  return n;
}

/** `30s`, `2m`, `500ms`, `1h` (a bare number is seconds) → ms, within 100 ms .. 24 h. */
export function durationOption(v: string | undefined, name: string): number {
  if (v === undefined) return 0;
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(v);
  if (!m) throw new UsageError(`--${name} takes a duration such as 30s, 2m or 500ms, got "${v}"`);
  const ms = Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? 's') as 'ms' | 's' | 'm' | 'h'];
  if (ms < 100 || ms > 86_400_000) throw new UsageError(`--${name} must be between 100ms and 24h, got ${v}`);
  return ms;
}

function urlOption(v: string): string {
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw new UsageError(`--url takes an http:// or https:// URL, got "${v}"`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new UsageError(`--url takes an http:// or https:// URL, got "${v}"`);
  return v.replace(/\/+$/, '');
}

/**
 * `--json` takes the report's file (outside checks read it there); `--json -`, or a bare
 * `--json` as the last argument or before another option, prints the report on stdout instead
 * of the text summary, as `--json` does on every other command.
 */
function bareJson(argv: readonly string[]): string[] {
  return argv.map((a, i) => (a === '--json' && (i === argv.length - 1 || argv[i + 1]?.startsWith('--')) ? '--json=-' : a));
}

export function parseBenchArgs(argv: string[]): { options: BenchOptions; help: boolean } {
  // --url may be given several times (a cluster, spread round-robin): taken out before the common parser.
  const urls: string[] = [];
  const rest: string[] = [];
  argv = bareJson(argv);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === '--url') {
      const v = argv[++i];
      if (v === undefined) throw new UsageError('--url needs a value');
      urls.push(...v.split(',').filter(Boolean).map(urlOption));
    } else if (a.startsWith('--url=')) urls.push(...a.slice(6).split(',').filter(Boolean).map(urlOption));
    else rest.push(a);
  }
  const args = parseOrUsage(rest, VALUED, ['spawn']);
  const o = args.options;
  if (args.positional.length > 0) throw new UsageError(`unexpected argument ${args.positional[0]}`);
  const spawn = args.flags.has('spawn');
  if (!args.help) {
    if (spawn && urls.length > 0) throw new UsageError('give --url or --spawn, not both');
    if (!spawn && urls.length === 0) throw new UsageError('give the ledger to load: --url URL (several for a cluster) or --spawn');
  }
  const rates = (o.get('rate') ?? '')
    .split(',')
    .filter((r) => r !== '')
    .map((r) => numOption(r, 'rate', 0, 0.1, 1_000_000));
  if (o.has('rate') && rates.length === 0) throw new UsageError('--rate takes batches per second, e.g. 500 or 500,1000,2000');
  const durationMs = durationOption(o.get('duration'), 'duration');
  const stepMs = durationOption(o.get('step'), 'step');
  if (rates.length > 1 && stepMs === 0) throw new UsageError('several rates are steps: give each one its length with --step, e.g. --step 30s');
  if (stepMs > 0 && rates.length === 0) throw new UsageError('--step needs --rate R1,R2,… (one step per rate)');
  if (o.has('batches') && (durationMs > 0 || stepMs > 0)) throw new UsageError('give --batches or --duration/--step, not both');
  if ((args.lists.get('json')?.length ?? 0) > 1) throw new UsageError('--json is given twice: one report file, or - for stdout');
  const payloads = o.get('payloads');
  if (payloads !== undefined && (o.has('txns') || o.has('keyspace') || o.has('invalid') || o.has('signers')))
    throw new UsageError('--payloads sends the file as it is: --txns, --signers, --keyspace and --invalid do not apply');
  const batches = durationMs > 0 || stepMs > 0 ? 0 : intOption(o.get('batches'), 'batches', 1000, 1, 10_000_000);
  const options: BenchOptions = {
    urls,
    spawn,
    batches,
    durationMs,
    connections: intOption(o.get('connections'), 'connections', 16, 1, 4096),
    rates,
    stepMs,
    txns: intOption(o.get('txns'), 'txns', 1, 1, 1000),
    signers: intOption(o.get('signers'), 'signers', 16, 1, 100_000),
    keyspace: intOption(o.get('keyspace'), 'keyspace', 0, 0, 100_000_000),
    invalid: numOption(o.get('invalid'), 'invalid', 0, 0, 1),
    payloads,
    json: o.get('json'),
    markdown: o.get('markdown'),
    html: o.get('html'),
    baseline: o.get('baseline'),
    repeat: intOption(o.get('repeat'), 'repeat', 1, 1, 100),
    workers: intOption(o.get('workers'), 'workers', 0, 0, 64),
    commitTimeoutMs: 1000 * intOption(o.get('commit-timeout'), 'commit-timeout', 60, 1, 3600),
    minEffect: numOption(o.get('min-effect'), 'min-effect', 5, 0, 100),
    alpha: numOption(o.get('alpha'), 'alpha', 0.05, 0.0001, 0.5),
    quiet: args.flags.has('quiet'),
  };
  if (options.baseline !== undefined && options.repeat < 2) throw new UsageError('--baseline compares repeated runs: give --repeat 2 or more');
  // Every report can be written: known before the load, not after it.
  if (!args.help) {
    if (options.json !== undefined && options.json !== '-') checkWritable(options.json, '--json');
    if (options.markdown !== undefined) checkWritable(options.markdown, '--markdown');
    if (options.html !== undefined) checkWritable(options.html, '--html');
  }
  return { options, help: args.help };
}
