/** Process entry: `npm start`. Reads flags and CAIRN_* variables, starts the node, stops on SIGINT/SIGTERM. */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig, usage, ConfigError, OPTIONS, describeConfig, type Config } from './config.js';
import { startNode, type RunningNode } from './node.js';
import { log } from './log.js';
import { writeFailure } from './store/errors.js';
import { StartupError } from './store/lock.js';
import { reasons, tryBind } from './startup.js';

/** What a fresh data directory lacks; read before start so the log can say what was created. */
function missingFiles(dataDir: string): string[] {
  return ['ledger.mdb', join('keys', 'validator.priv'), join('keys', 'admin.priv')].filter((f) => !existsSync(join(dataDir, f)));
}

const BIND_OPTION: Record<string, { key: keyof Config; option: keyof typeof OPTIONS }> = {
  ledger: { key: 'ledgerBind', option: 'ledgerBind' },
  node: { key: 'nodeBind', option: 'nodeBind' },
  data: { key: 'dataBind', option: 'dataBind' },
  network: { key: 'networkBind', option: 'networkBind' },
  component: { key: 'componentBind', option: 'componentBind' },
  metrics: { key: 'metrics', option: 'metrics' },
};

/** Turns "<name>: cannot listen on host:port" into a line that says why and what to change. */
async function explainStartFailure(err: unknown, config: Config): Promise<string | null> {
  const m = err instanceof Error ? /^(\w+): cannot listen on (\S+):(\d+)\b/.exec(err.message) : null;
  const which = m ? BIND_OPTION[m[1]!] : undefined;
  if (!m || !which) return null;
  const o = OPTIONS[which.option]!;
  const code = await tryBind(m[2]!, Number(m[3]));
  const why =
    code === 'EADDRINUSE'
      ? 'the port is already in use (another node or program listens there)'
      : code === 'EADDRNOTAVAIL'
        ? 'this machine has no such address'
        : code === 'EACCES'
          ? 'permission denied (ports below 1024 need privileges)'
          : code
            ? code
            : 'the address could not be bound';
  const interfaceName = m[1] === 'component' ? 'component (transaction processors)' : m[1];
  const off = m[1] === 'component' ? ', or turn it off with off' : '';
  return `cannot listen on ${m[2]}:${m[3]} for interface ${interfaceName}: ${why}. Choose another address with --${o.flag} host:port or ${o.env}=host:port (0 as port picks a free one)${off}. Nothing was written to the data directory ${config.dataDir}`;
}

let node: RunningNode | null = null;
/** The node once its start ends (null before it began): a stop waits for it. */
let started: Promise<RunningNode | null> = Promise.resolve(null);
let stopping = false;

/**
 * Closes the node (in-flight answers are sent first) and ends the process with `code`. A
 * signal during the start closes the node once it has started: the handlers are in place
 * before the start line, which is what a supervisor (or a test) waits for before it may send
 * one. (A failed start ends the process itself.)
 */
function stop(why: string, code: number): void {
  if (stopping) return;
  stopping = true;
  log.info(`${why}: shutting down`);
  started
    .then((n) => n?.close())
    .then(
      () => {
        if (code === 0) log.info('stopped');
        process.exit(code);
      },
      (err: unknown) => {
        log.error('shutdown failed', err);
        process.exit(code || 1);
      },
    );
}

/**
 * An error nothing handled (a rejected promise, e.g. from inside the store library, or a
 * throw): the node can no longer vouch for what it was doing. It raises an alarm (a storage
 * alarm by the error's cause, else COMMITTER): writes are refused, reads served, and the
 * ledger recovers by itself (src/ledger/recovery.ts). The process does not exit.
 */
function onProcessError(what: string, err: unknown): void {
  // A failed LMDB commit rejects with a generic "Commit failed" whose `commitError` holds
  // the actual error (EIO, ENOSPC): report that one, so the fault names the disk error.
  if (typeof (err as { commitError?: { then?: unknown } } | null)?.commitError?.then === 'function') {
    void writeFailure(err).then((actual) => reportProcessError(what, actual));
    return;
  }
  reportProcessError(what, err);
}

function reportProcessError(what: string, err: unknown): void {
  const reason = `${what}: ${err instanceof Error ? err.message : String(err)}`;
  log.error(reason);
  if (!node) process.exit(1);
  if (node.ledger.storageFault(err, 'ledger.mdb') === null) node.ledger.markFaulty(reason, 'COMMITTER');
}

async function main(): Promise<void> {
  if (process.argv.includes('--help') || process.argv.includes('-h')) {
    process.stdout.write(usage());
    return;
  }
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`cairn start: ${err.message} (cairn start --help shows the options)\n`);
      process.exit(2);
    }
    throw err;
  }
  log.setLevel(config.logLevel);
  if (config.logFormat !== 'auto') log.setFormat(config.logFormat);
  // The committer thread and the verify workers log through their own copy of the logger,
  // set up from the environment they inherit: pass the flags' values on.
  process.env.CAIRN_LOG_LEVEL = config.logLevel;
  process.env.CAIRN_LOG_FORMAT = config.logFormat;
  log.fields('info', { config: describeConfig(config) }, 'configuration (secrets shown as [set])');
  process.on('unhandledRejection', (err) => onProcessError('unhandled promise rejection', err));
  process.on('uncaughtException', (err) => onProcessError('uncaught exception', err));
  const missing = missingFiles(config.dataDir);
  // Ctrl-C under npm arrives twice (from the terminal and forwarded by npm): stop() runs once.
  process.on('SIGINT', () => stop('SIGINT', 0));
  process.on('SIGTERM', () => stop('SIGTERM', 0));
  const start = startNode(config);
  // A failed start ends the process itself (below, with its own code): a stop waits for ever.
  started = start.catch(() => new Promise<never>(() => {}));
  try {
    node = await start;
  } catch (err) {
    const hint = await explainStartFailure(err, config);
    if (hint === null) throw err;
    log.error(hint);
    process.exit(1);
  }
  if (missing.includes('ledger.mdb')) {
    log.info(
      `data directory ${config.dataDir}: new; genesis block written, keys created in ${join(config.dataDir, 'keys')} (validator.priv, admin.priv; mode 0600)`,
    );
  } else {
    const made = missing.map((f) => f.replace(/^keys[/\\]/, '')).join(', ');
    log.info(`data directory ${config.dataDir}: existing, head block ${node.ledger.head.blockNum}${made ? `; created ${made}` : ''}`);
  }
  if (!stopping) log.info('ready; Ctrl-C (SIGINT) or SIGTERM stops the node cleanly');
}

main().catch((err: unknown) => {
  if (err instanceof StartupError) {
    log.error(err.message);
    process.exit(err.exitCode);
  }
  log.error(`failed to start: ${reasons(err)}`);
  process.exit(1);
});
