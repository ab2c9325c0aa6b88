/**
 * The node's logger (pino), one line per message on stderr.
 *
 * Format: JSON lines (`{"level":"info","time":"…","pid":…,"msg":"…", …fields}`) unless
 * stderr is a terminal, then readable lines (`<ISO time> INFO  message key=value …`).
 * CAIRN_LOG_FORMAT (or `--log-format`) = json | pretty | auto (default) forces one.
 * The level is CAIRN_LOG_LEVEL (or `--log-level`), `info` by default.
 *
 * Error objects print their message only (no stack) unless the level is debug, so nothing
 * internal leaks into logs that are shipped around. The committer thread logs through its
 * own instance of this module, with the same settings (environment).
 */
import { isatty } from 'node:tty';
import pino from 'pino';

const LEVELS = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const;
export type Level = keyof typeof LEVELS;
export type LogFormat = 'json' | 'pretty';

function envLevel(): Level {
  const l = process.env.CAIRN_LOG_LEVEL as Level | undefined;
  return l && l in LEVELS ? l : 'info';
}

/** json | pretty from CAIRN_LOG_FORMAT; `auto` (or unset) picks pretty on a terminal. */
export function logFormat(v: string | undefined = process.env.CAIRN_LOG_FORMAT, tty: boolean = isatty(2)): LogFormat {
  if (v === 'json' || v === 'pretty') return v;
  return tty ? 'pretty' : 'json';
}

const PRETTY_SKIP = new Set(['level', 'time', 'msg', 'pid']);

/** Flattens nested fields into `a.b=value` pairs for the readable format. */
function pairs(o: Record<string, unknown>, prefix: string, out: string[]): void {
  for (const [k, v] of Object.entries(o)) {
    if (prefix === '' && PRETTY_SKIP.has(k)) continue;
    const key = prefix ? `${prefix}.${k}` : k;
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) pairs(v as Record<string, unknown>, key, out);
    else out.push(`${key}=${typeof v === 'string' && !/\s/.test(v) && v !== '' ? v : JSON.stringify(v)}`);
  }
}

/** One JSON line from pino as a readable line: time, level, message, then the fields. */
export function prettyLine(json: string): string {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.endsWith('\n') ? json : `${json}\n`;
  }
  const extra: string[] = [];
  pairs(o, '', extra);
  const level = String(o.level ?? '').toUpperCase();
  return `${String(o.time ?? '')} ${level.padEnd(5)} ${String(o.msg ?? '')}${extra.length ? ` ${extra.join(' ')}` : ''}\n`;
}

/**
 * Set once stderr fails: whoever read it went away (EPIPE: a log pipe whose reader exited,
 * `cairn start | head`, a log shipper restarting). From then on lines are dropped and the
 * node goes on serving. Without a listener, each failed write was an uncaught exception
 * whose report was another failed write: the process spun on it and ignored SIGTERM.
 */
let stderrGone = false;
process.stderr.on('error', () => {
  stderrGone = true;
});
// Nothing writes to stdout after start, but a broken stdout must not end the node either.
process.stdout.on('error', () => undefined);

/**
 * Through process.stderr (synchronous for files, terminals and pipes on Linux), so that the
 * lines of a process that exits right after are not lost and tests can capture them.
 */
const toStderr = (s: string): void => {
  if (stderrGone) return;
  try {
    process.stderr.write(s);
  } catch {
    // stderr closed: nothing to report to
    stderrGone = true;
  }
};

function makeLogger(format: LogFormat, level: Level): pino.Logger {
  const destination = { write: format === 'pretty' ? (s: string) => toStderr(prettyLine(s)) : toStderr };
  return pino(
    {
      level,
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
}

let threshold: Level = envLevel();
let logger = makeLogger(logFormat(), threshold);

function fmt(v: unknown): string {
  if (v instanceof Error) return threshold === 'debug' && v.stack ? v.stack : `${v.name}: ${v.message}`;
  if (typeof v === 'string') return v;
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
}

function emit(level: Exclude<Level, 'silent'>, parts: unknown[]): void {
  if (LEVELS[level] < LEVELS[threshold]) return;
  logger[level](parts.length === 1 && typeof parts[0] === 'string' ? parts[0] : parts.map(fmt).join(' '));
}

export const log = {
  debug: (...p: unknown[]): void => emit('debug', p),
  info: (...p: unknown[]): void => emit('info', p),
  warn: (...p: unknown[]): void => emit('warn', p),
  error: (...p: unknown[]): void => emit('error', p),
  /** A message with structured fields (JSON keys beside `msg`; `key=value` pairs when readable). */
  fields(level: Exclude<Level, 'silent'>, fields: Record<string, unknown>, msg: string): void {
    if (LEVELS[level] < LEVELS[threshold]) return;
    logger[level](fields, msg);
  },
  /** Whether a message at `level` would be written (to skip building it otherwise). */
  enabled(level: Exclude<Level, 'silent'>): boolean {
    return LEVELS[level] >= LEVELS[threshold];
  },
  setLevel(l: Level): void {
    threshold = l;
    logger.level = l;
  },
  /** Switches the format (the process entry does, from the configuration). */
  setFormat(f: LogFormat): void {
    logger = makeLogger(f, threshold);
  },
};
