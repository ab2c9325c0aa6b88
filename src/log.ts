/**
 * Minimal leveled logger. One line per message on stderr, with a level and a timestamp.
 * Error objects print their message only (no stack) unless CAIRN_LOG_LEVEL=debug,
 * so nothing internal leaks into logs that are shipped around.
 */
const LEVELS = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const;
type Level = keyof typeof LEVELS;

function current(): number {
  const l = (process.env.CAIRN_LOG_LEVEL ?? 'info') as Level;
  return LEVELS[l] ?? LEVELS.info;
}

let threshold = current();

function fmt(v: unknown): string {
  if (v instanceof Error) return threshold <= LEVELS.debug && v.stack ? v.stack : `${v.name}: ${v.message}`;
  if (typeof v === 'string') return v;
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
}

function emit(level: Level, parts: unknown[]): void {
  if (LEVELS[level] < threshold) return;
  process.stderr.write(`${new Date().toISOString()} ${level.toUpperCase()} ${parts.map(fmt).join(' ')}\n`);
}

export const log = {
  debug: (...p: unknown[]): void => emit('debug', p),
  info: (...p: unknown[]): void => emit('info', p),
  warn: (...p: unknown[]): void => emit('warn', p),
  error: (...p: unknown[]): void => emit('error', p),
  setLevel(l: Level): void {
    threshold = LEVELS[l];
  },
};
