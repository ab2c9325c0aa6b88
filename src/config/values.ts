/**
 * The parsers of setting values (src/config.ts's loadConfig and src/config/cluster.ts): each
 * takes the text of a flag or an environment variable and gives the typed value, or throws a
 * ConfigError that names the setting and what it expects.
 */
export interface Bind {
  host: string;
  port: number;
}

/** `--metrics`: off (default), `on` (GET /metrics on the ledger port) or its own host:port. */
export type MetricsSetting = { mode: 'off' } | { mode: 'on' } | { mode: 'listen'; bind: Bind };

/** Log lines as JSON, or readable; `auto` picks readable when stderr is a terminal. */
export type LogFormat = 'auto' | 'json' | 'pretty';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';
const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error', 'silent'];

export class ConfigError extends Error {}

export function logFormatSetting(v: string): LogFormat {
  if (v !== 'auto' && v !== 'json' && v !== 'pretty') throw new ConfigError(`log format: expected auto, json or pretty, got "${v}"`);
  return v;
}

export function metricsSetting(v: string): MetricsSetting {
  if (['off', 'false', '0', 'no'].includes(v)) return { mode: 'off' };
  if (['on', 'true', '1', 'yes'].includes(v)) return { mode: 'on' };
  if (!/:\d{1,5}$/.test(v)) throw new ConfigError(`metrics: expected off, on or host:port, got "${v}"`);
  return { mode: 'listen', bind: parseBind(v, 'metrics') };
}

export function logLevel(v: string): LogLevel {
  if (!(LOG_LEVELS as readonly string[]).includes(v)) throw new ConfigError(`log level: expected one of ${LOG_LEVELS.join(', ')}, got "${v}"`);
  return v as LogLevel;
}

/** Loopback hosts: 127.0.0.0/8, ::1 and localhost. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** `on`/`off` (also true/false, 1/0, yes/no); unset: on unless the data API binds a loopback host. */
export function dataAuth(v: string | undefined, dataBind: Bind): boolean {
  if (v === undefined) return !isLoopback(dataBind.host);
  if (['on', 'true', '1', 'yes'].includes(v)) return true;
  if (['off', 'false', '0', 'no'].includes(v)) return false;
  throw new ConfigError(`data auth: expected on or off, got "${v}"`);
}

export function parseArgs(argv: string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] ?? '';
    if (!a.startsWith('--')) throw new ConfigError(`unexpected argument ${a}`);
    const eq = a.indexOf('=');
    const next = argv[i + 1];
    if (eq > 0) out.set(a.slice(2, eq), a.slice(eq + 1));
    else if (next !== undefined && !next.startsWith('--')) {
      out.set(a.slice(2), next);
      i++;
    } else out.set(a.slice(2), 'true');
  }
  return out;
}

export function parseBind(v: string, what: string): Bind {
  const m = /^(.+):(\d{1,5})$/.exec(v);
  const host = m?.[1];
  if (!m || host === undefined || Number(m[2]) > 65535) throw new ConfigError(`${what}: expected host:port, got "${v}"`);
  return { host: host.replace(/^\[(.*)\]$/, '$1'), port: Number(m[2]) };
}

export function componentBind(v: string): Bind | null {
  return v === 'off' ? null : parseBind(v, 'component bind');
}

/** An integer of at least `min`, as digits only. */
export function int(v: string, what: string, min: number): number {
  if (!/^\d+$/.test(v) || Number(v) < min) throw new ConfigError(`${what}: expected an integer >= ${min}, got "${v}"`);
  return Number(v);
}

/** A size in MiB: a plain number of MiB, or one with a unit (MiB, M, MB; GiB, G, GB). */
export function sizeMiB(v: string, what: string, min: number): number {
  const m = /^(\d+)\s*(mib|mb|m|gib|gb|g)?$/i.exec(v.trim());
  const n = m ? Number(m[1]) * (m[2]?.toLowerCase().startsWith('g') ? 1024 : 1) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min)
    throw new ConfigError(`${what}: expected a size of at least ${min} MiB (e.g. 512, 512MiB, 1GiB), got "${v}"`);
  return n;
}

export function ackDurability(v: string): 'flush' | 'commit' {
  if (v !== 'flush' && v !== 'commit') throw new ConfigError(`ack durability: expected flush or commit, got "${v}"`);
  return v;
}
